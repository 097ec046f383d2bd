"""Tables, migrations, the engine and every SQL statement of the product."""

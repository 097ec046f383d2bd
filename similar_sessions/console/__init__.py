"""The console: static pages served by the app, talking to /graphql with the operator's key."""

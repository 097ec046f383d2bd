// The panel's status filter: which sessions may be neighbours ("which failed sessions went like
// this one?"). A choice is applied with its button, so walking the list with the arrow keys
// sends nothing; the statuses offered are those this page has seen, and any other can be typed.

import { h } from "./dom.js";

export const STATUS_MAX = 200; // the API's bound on one filter value
const OTHER = "\u0000another"; // the "Another status…" option; no status holds a NUL

/**
 * The filter form; `onApply(status)` hears the operator apply a choice (null: any status).
 * `offer(statuses, current)` sets the statuses listed and the one selected. `id` names the
 * form and its fields, `label` the list, `name` the form for assistive technology.
 */
export function statusFilter({
  onApply,
  id = "similar",
  label = "Neighbours' status",
  name = "Filter similar sessions",
}) {
  const select = h("select", { id: `${id}-status`, name: "status" });
  const other = h("input", {
    id: `${id}-status-other`,
    type: "text",
    maxlength: STATUS_MAX,
    autocomplete: "off",
    spellcheck: "false",
  });
  const otherField = h(
    "span",
    { class: "filter-other" },
    h("label", { for: `${id}-status-other` }, "Status"),
    other,
  );
  let offered = null;

  function showOther() {
    const wanted = select.value === OTHER;
    otherField.hidden = !wanted;
    other.required = wanted; // the browser's own message asks for a value
  }

  function offer(statuses, current) {
    const key = JSON.stringify([statuses, current]);
    if (key === offered) return; // rebuilding the list would close it under the operator
    offered = key;
    const option = (value, text) => h("option", { value }, text);
    select.replaceChildren(
      option("", "Any status"),
      ...statuses.map((s) => option(s, s)),
      option(OTHER, "Another status…"),
    );
    select.value = current ?? "";
    other.value = "";
    showOther();
  }

  select.addEventListener("change", showOther);
  const form = h(
    "form",
    { id: `${id}-filter`, class: "panel-filter", "aria-label": name },
    h("label", { for: `${id}-status` }, label),
    h("span", { class: "filter-fields" }, select, otherField, h("button", { type: "submit", class: "button-quiet" }, "Apply")),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const value = select.value === OTHER ? other.value.trim() : select.value;
    if (select.value === OTHER && !value) {
      other.value = "";
      form.reportValidity();
      return;
    }
    onApply(value || null);
  });
  return { element: form, offer };
}

// The "Alerts" page: the account's alert rules (what each tells, where, whether it is
// disabled and why) and their latest deliveries (state, attempts, next try), read with a key
// holding the manage_alerts scope.

import { graphql } from "./api.js";
import { h, time } from "./dom.js";
import { ALERTS, VIEWER } from "./queries.js";

const SCOPE = "manage_alerts";

/** Whether the address asks for the alerts page. */
export function wantsAlerts(params) {
  return params.has("alerts") && !params.has("sessionId");
}

/** [viewer, answer]: the answer null when the key lacks the scope. */
export async function fetchAlerts(key) {
  const { viewer } = await graphql(VIEWER, {}, key);
  if (!viewer.scopes.includes(SCOPE)) return [viewer, null];
  const data = await graphql(ALERTS, {}, key);
  return [data.viewer, data];
}

function what(rule) {
  const statuses = rule.statuses ? rule.statuses.join(", ") : "any status";
  if (rule.kind === "new") {
    return `New group: ${rule.minSessions} sessions in ${rule.windowHours} h (${statuses})`;
  }
  return (
    `Surge: ${rule.factor}× its mean over ${rule.baselineDays} days, ` +
    `at least ${rule.minSessions} in ${rule.windowHours} h (${statuses})`
  );
}

function ruleRow(rule) {
  return h(
    "tr",
    { class: "alert-rule" },
    h("td", {}, what(rule)),
    h("td", { class: "url" }, rule.url),
    h("td", {}, rule.enabled ? "Enabled" : `Disabled: ${rule.disabledReason ?? ""}`),
  );
}

function deliveryRow(d) {
  const last = d.lastStatus ? `HTTP ${d.lastStatus}` : d.lastError ?? "";
  return h(
    "tr",
    { class: "alert-delivery" },
    h("td", {}, time(d.createdAt)),
    h("td", { class: `state state-${d.state}` }, d.state),
    h("td", {}, String(d.attempts)),
    h("td", {}, d.nextAttemptAt ? time(d.nextAttemptAt) : "—"),
    h("td", {}, last),
    h("td", { class: "webhook-id" }, d.webhookId),
  );
}

function table(caption, heads, rows) {
  return h(
    "table",
    { class: "alerts-table" },
    h("caption", {}, caption),
    h("thead", {}, h("tr", {}, heads.map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows),
  );
}

/** The page's children for the answer of `fetchAlerts`. */
export function renderAlerts(answer) {
  const heading = h("h1", { tabindex: "-1" }, "Alerts");
  if (answer === null) {
    return [heading, h("p", { class: "empty" }, `This API key lacks the ${SCOPE} scope.`)];
  }
  const rules = answer.alertRules;
  const deliveries = answer.alertDeliveries;
  return [
    heading,
    rules.length
      ? table("Rules", ["Tells", "Webhook", "State"], rules.map(ruleRow))
      : h("p", { class: "empty" }, "No alert rule. Add one with `similar-sessions alerts add`."),
    deliveries.length
      ? table(
          "Latest deliveries",
          ["Decided", "State", "Attempts", "Next try", "Last answer", "Webhook id"],
          deliveries.map(deliveryRow),
        )
      : h("p", { class: "empty" }, "No alert delivered yet."),
  ];
}

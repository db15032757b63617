package score

import "strings"

// opensre action names (answer.yml optimal_trajectory / required_queries).
const (
	ActListEKSPods         = "list_eks_pods"
	ActGetEKSEvents        = "get_eks_events"
	ActGetEKSPodLogs       = "get_eks_pod_logs"
	ActGetEKSNodeHealth    = "get_eks_node_health"
	ActListEKSDeployments  = "list_eks_deployments"
	ActGetEKSDeployments   = "get_eks_deployments"
	ActQueryDatadogLogs    = "query_datadog_logs"
	ActQueryDatadogMonitor = "query_datadog_monitors"
	ActQueryGrafanaMetrics = "query_grafana_metrics"
	ActQueryGrafanaLogs    = "query_grafana_logs"
	ActQueryGrafanaAlerts  = "query_grafana_alert_rules"
)

// IntentActions is THE table mapping our tool intents onto the opensre
// action names they are equivalent to, decided from what each action means in
// the suite:
//   - list_eks_pods / get_eks_events / get_eks_pod_logs / get_eks_node_health /
//     list_eks_deployments read the EKS evidence files; our Kubernetes tools
//     read the same sources.
//   - query_datadog_logs is a log search; query_datadog_monitors lists
//     monitors.
//   - In the RDS scenarios the Grafana actions front AWS telemetry:
//     query_grafana_metrics = CloudWatch metrics and Performance Insights,
//     query_grafana_logs = RDS events and log search, query_grafana_alert_rules
//     = alert rules / monitors.
//
// describe_resource is resolved by its "kind" parameter (describeKindActions).
var IntentActions = map[string][]string{
	"list_pods":          {ActListEKSPods},
	"check_pod_status":   {ActListEKSPods},
	"get_events":         {ActGetEKSEvents},
	"fetch_pod_logs":     {ActGetEKSPodLogs},
	"get_node_health":    {ActGetEKSNodeHealth},
	"list_deployments":   {ActListEKSDeployments, ActGetEKSDeployments},
	"search_logs":        {ActQueryDatadogLogs, ActQueryGrafanaLogs},
	"list_monitors":      {ActQueryDatadogMonitor, ActQueryGrafanaAlerts},
	"query_prometheus":   {ActQueryGrafanaMetrics},
	"survey_metrics":     {ActQueryGrafanaMetrics},
	"query_db_metrics":   {ActQueryGrafanaMetrics},
	"get_db_top_queries": {ActQueryGrafanaMetrics},
	"get_db_events":      {ActQueryGrafanaLogs},
	// Change history and the re-investigation tool have no opensre action.
	"get_deploy_history":     nil,
	"get_commits":            nil,
	"get_commit_diff":        nil,
	"re_investigate_service": nil,
	"describe_resource":      nil,
	// A provider's public status page is outside evidence no opensre
	// action reads (its scenarios have no status page).
	"get_status_page": nil,
}

// describeKindActions maps describe_resource's kind parameter.
var describeKindActions = map[string][]string{
	"pod":        {ActListEKSPods},
	"pods":       {ActListEKSPods},
	"deployment": {ActListEKSDeployments, ActGetEKSDeployments},
	"node":       {ActGetEKSNodeHealth},
	"nodes":      {ActGetEKSNodeHealth},
	"event":      {ActGetEKSEvents},
	"events":     {ActGetEKSEvents},
}

func normAction(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// ActionsFor returns the opensre actions one tool call counts as. A call
// whose intent already is an opensre action name counts as itself.
func ActionsFor(c ToolCall) []string {
	intent := normAction(c.Intent)
	out := []string{intent}
	if intent == "describe_resource" {
		if k, ok := c.Params["kind"].(string); ok {
			out = append(out, describeKindActions[strings.ToLower(k)]...)
		}
		return out
	}
	return append(out, IntentActions[intent]...)
}

// ExecutedActions is the set of opensre actions the calls executed.
func ExecutedActions(calls []ToolCall) map[string]bool {
	out := map[string]bool{}
	for _, c := range calls {
		for _, a := range ActionsFor(c) {
			out[a] = true
		}
	}
	return out
}

package tools

import (
	"strings"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/intent"
)

const (
	catLogs    = evidencev1.ToolCategory_TOOL_CATEGORY_LOGS
	catMetrics = evidencev1.ToolCategory_TOOL_CATEGORY_METRICS
	catCluster = evidencev1.ToolCategory_TOOL_CATEGORY_CLUSTER
	catCode    = evidencev1.ToolCategory_TOOL_CATEGORY_CODE
)

func nsParam(required bool) *evidencev1.ToolParam {
	p := ctxDefault(ph(pString("namespace", "Kubernetes namespace (\"all\" for every namespace)"), "default"), "active_namespace")
	p.Required = required
	return p
}

// DefaultRegistry returns every built-in tool: logs, metrics, cluster state,
// changes, databases, monitors and code (the list internal/intent names).
func DefaultRegistry() (*Registry, error) {
	reg := NewRegistry()
	for _, t := range append(defaultTools(), codeTools()...) {
		if err := reg.Add(t); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

func defaultTools() []*Tool {
	return []*Tool{
		{
			Def: &evidencev1.ToolDefinition{
				Intent: string(intent.FetchPodLogs), Label: "Get Pod Logs", Icon: "terminal", SlashCommand: "/logs", Category: catLogs,
				Description: "Fetch logs from a running or previously crashed pod. Wildcards (auth-*) resolve to the newest matching pod; error, panic and OOM lines are extracted.",
				ParamsSchema: withWindow(
					nsParam(true),
					ctxDefault(req(pSelect("pod", "pod name, glob pattern (auth-*) or workload name prefix")), "active_pod"),
					pSelect("container", "container name (default: every container)"),
					ph(pBool("previous", "fetch the previous (crashed) container; unset: current plus previous when it restarted"), "Fetch from previous (crashed) container"),
					ph(pNumber("tail_lines", "lines from the end of the log"), "200"),
				),
				RequiresContext: []string{"namespace"},
				Integrations:    []string{backend.AreaPodLogs, backend.AreaPods},
				Usage:           "/logs namespace=<namespace> pod=<pod|prefix-*> [container=<c>] [previous=true] [tail_lines=200]",
			},
			Needs: []string{backend.AreaPodLogs}, Handler: handleFetchPodLogs,
			Type: evidencev1.EvidenceType_EVIDENCE_TYPE_LOG, Domain: evidencev1.Domain_DOMAIN_COMPUTE,
		},
		{
			Def: &evidencev1.ToolDefinition{
				Intent: string(intent.QueryPrometheus), Label: "Run PromQL", Icon: "monitoring", SlashCommand: "/promql", Category: catMetrics,
				Description: "Execute a Prometheus range query over the incident window and pin the result: per series latest, peak, mean, stddev, points above 2σ and shape.",
				ParamsSchema: withWindow(
					req(ph(pString("query", "PromQL expression"), "e.g., rate(http_requests_total[5m])")),
					ph(pNumber("range_minutes", "look back this many minutes from the window end"), "60"),
					ph(pString("step", "resolution (duration, e.g. 30s; default window/240, at least 15s)"), "30s"),
				),
				Integrations: []string{backend.AreaMetrics},
				Usage:        "/promql query=<promql> [range_minutes=60] [step=30s]",
			},
			Needs: []string{backend.AreaMetrics}, Handler: handleQueryPrometheus,
			Type: evidencev1.EvidenceType_EVIDENCE_TYPE_METRIC, Domain: evidencev1.Domain_DOMAIN_COMPUTE,
		},
		{
			Def: &evidencev1.ToolDefinition{
				Intent: string(intent.SurveyMetrics), Label: "Survey Metrics", Icon: "query_stats", SlashCommand: "/metrics", Category: catMetrics,
				Description: "Discover which metrics exist (Prometheus series and label values, no assumed names) for a namespace, service or pod, query each over the incident window and pin the most changed series first: latest, peak, baseline, shape and onset; histograms as p99.",
				ParamsSchema: withWindow(
					ctxDefault(ph(pString("namespace", "namespace label to scope the survey"), "default"), "active_namespace"),
					ctxDefault(ph(pString("service", "service/app/job label to scope the survey"), "checkout"), "active_service"),
					ctxDefault(ph(pString("pod", "pod label (or prefix) to scope the survey"), "checkout-*"), "active_pod"),
					ph(pString("node", "node name to scope the survey (node, instance or hostname labels)"), "worker-node-1"),
					ph(pNumber("max_series", "series to query at most"), "150"),
				),
				Integrations: []string{backend.AreaMetrics},
				Usage:        "/metrics [namespace=<ns>] [service=<svc>] [pod=<pod>]",
			},
			Needs: []string{backend.AreaMetrics}, Handler: handleSurveyMetrics,
			Type: evidencev1.EvidenceType_EVIDENCE_TYPE_METRIC, Domain: evidencev1.Domain_DOMAIN_COMPUTE,
		},
		{
			Def: &evidencev1.ToolDefinition{
				Intent: string(intent.DescribeResource), Label: "Describe Resource", Icon: "info", SlashCommand: "/describe", Category: catCluster,
				Description: "kubectl describe for a pod, deployment, service, node, configmap, ingress, PVC, PodDisruptionBudget or HorizontalPodAutoscaler: status, conditions, key signals and the object's events (never Secret values).",
				ParamsSchema: []*evidencev1.ToolParam{
					req(pString("kind", "resource kind: "+strings.Join(describeKinds, ", ")+", or any custom resource kind (externalsecret, certificate, rollout, ...)")),
					req(ph(pString("name", "resource name"), "web")),
					nsParam(false), // required for namespaced kinds; a node or a cluster-scoped resource has none
				},
				Integrations: []string{backend.AreaResources, backend.AreaPods, backend.AreaDeployments, backend.AreaNodes, backend.AreaEvents},
				Usage:        "/describe kind=<pod|deployment|service|node|configmap|secret|ingress|pvc|networkpolicy|pdb|hpa|any custom kind> name=<name, or * for every networkpolicy> namespace=<namespace>",
			},
			Needs: []string{backend.AreaResources}, Handler: handleDescribeResource,
			Type: evidencev1.EvidenceType_EVIDENCE_TYPE_K8S_RESOURCE, Domain: evidencev1.Domain_DOMAIN_COMPUTE,
		},
		{
			Def: &evidencev1.ToolDefinition{
				Intent: string(intent.GetEvents), Label: "Cluster Events", Icon: "event_note", SlashCommand: "/events", Category: catCluster,
				Description: "Kubernetes events of a namespace in the time window, optionally for one involved object; warnings first, newest first.",
				ParamsSchema: withWindow(
					nsParam(true),
					ph(pNumber("since_minutes", "look back this many minutes from the window end"), "60"),
					ph(pString("involved_object", "kind/name, name or glob of the involved object"), "e.g., pod/auth-5b6q"),
					pSelect("type", "event type", "Warning", "Normal"),
					ph(pString("reason", "event reason"), "BackOff"),
				),
				RequiresContext: []string{"namespace"},
				Integrations:    []string{backend.AreaEvents},
				Usage:           "/events namespace=<namespace> [since_minutes=60] [involved_object=pod/<name>] [type=Warning]",
			},
			Needs: []string{backend.AreaEvents}, Handler: handleGetEvents,
			Type: evidencev1.EvidenceType_EVIDENCE_TYPE_K8S_EVENT, Domain: evidencev1.Domain_DOMAIN_COMPUTE,
		},
		{
			Def: &evidencev1.ToolDefinition{
				Intent: string(intent.SearchLogs), Label: "Search Logs", Icon: "search", SlashCommand: "/search", Category: catLogs,
				Description: "Search the log store (Elasticsearch/OpenSearch query_string, Loki, Datadog) for a pattern across services, with level and time filters.",
				ParamsSchema: withWindow(
					req(ph(pString("query", "query_string / free text (\"*\" for everything)"), "e.g., TimeoutException")),
					ctxDefault(pString("index", "index or data source"), "elk_index"),
					pSelect("level", "minimum level", "ERROR", "WARN", "INFO", "DEBUG"),
					ph(pNumber("since_minutes", "look back this many minutes from the window end"), "60"),
					pString("namespace", "only this namespace"),
					pString("service", "only this service"),
					pString("pod", "only this pod"),
					ph(pNumber("limit", "maximum hits"), "100"),
					pBool("exact", "answer only what the query matches: no widening when it finds nothing"),
				),
				Integrations: []string{backend.AreaLogs},
				Usage:        "/search query=<text> [level=ERROR] [service=<svc>] [since_minutes=60] [exact=true]",
			},
			Needs: []string{backend.AreaLogs}, Handler: handleSearchLogs,
			Type: evidencev1.EvidenceType_EVIDENCE_TYPE_LOG, Domain: evidencev1.Domain_DOMAIN_UNKNOWN,
		},
		{
			Def: &evidencev1.ToolDefinition{
				Intent: string(intent.CheckPodStatus), Label: "Pod Health", Icon: "health_and_safety", SlashCommand: "/status", Category: catCluster,
				Description: "Check pod phase, readiness, restart counts, OOM kills, waiting/terminated reasons and last state.",
				ParamsSchema: []*evidencev1.ToolParam{
					nsParam(true),
					ph(pString("label_selector", "label selector"), "e.g., app=web"),
					ph(pString("pod", "pod name, glob or workload prefix"), "web-*"),
				},
				RequiresContext: []string{"namespace"},
				Integrations:    []string{backend.AreaPods},
				Usage:           "/status namespace=<namespace> [label_selector=app=<app>] [pod=<name|prefix-*>]",
			},
			Needs: []string{backend.AreaPods}, Handler: handleCheckPodStatus,
			Type: evidencev1.EvidenceType_EVIDENCE_TYPE_K8S_RESOURCE, Domain: evidencev1.Domain_DOMAIN_COMPUTE,
		},
		{
			Def: &evidencev1.ToolDefinition{
				Intent: string(intent.ReinvestigateService), Label: "Investigate Service", Icon: "radar", SlashCommand: "/reinvestigate", Category: catCluster,
				Description: "Run the full investigation pipeline against another service as a sub-investigation whose evidence merges into this session.",
				ParamsSchema: withWindow(
					ctxDefault(req(pString("service", "service to investigate")), "active_service"),
					nsParam(true),
				),
				RequiresContext: []string{"namespace"},
				Integrations:    []string{IntegrationBrain},
				Usage:           "/reinvestigate service=<service> namespace=<namespace>",
			},
			Needs: []string{IntegrationBrain}, Handler: handleReInvestigate,
			Type: evidencev1.EvidenceType_EVIDENCE_TYPE_K8S_RESOURCE, Domain: evidencev1.Domain_DOMAIN_UNKNOWN,
		},
		// Further tools.
		{
			Def: &evidencev1.ToolDefinition{
				Intent: string(intent.ListPods), Label: "List Pods", Icon: "view_list", SlashCommand: "/pods", Category: catCluster,
				Description: "Namespace-wide pod status: phase, readiness, restarts, reasons, node; unhealthy pods first.",
				ParamsSchema: []*evidencev1.ToolParam{
					nsParam(false),
					ph(pString("label_selector", "label selector"), "app=web"),
					pBool("unhealthy_only", "only pods that are not running and ready"),
				},
				Integrations: []string{backend.AreaPods},
				Usage:        "/pods [namespace=<namespace|all>] [label_selector=<sel>] [unhealthy_only=true]",
			},
			Needs: []string{backend.AreaPods}, Handler: handleListPods,
			Type: evidencev1.EvidenceType_EVIDENCE_TYPE_K8S_RESOURCE, Domain: evidencev1.Domain_DOMAIN_COMPUTE,
		},
		{
			Def: &evidencev1.ToolDefinition{
				Intent: string(intent.ListDeployments), Label: "Deployments", Icon: "deployed_code", SlashCommand: "/deployments", Category: catCluster,
				Description: "Deployments with desired/ready/available/unavailable replicas, conditions and rollout history from ReplicaSets.",
				ParamsSchema: []*evidencev1.ToolParam{
					nsParam(false),
					ph(pString("name", "deployment name or glob"), "web"),
					pString("label_selector", "label selector"),
				},
				Integrations: []string{backend.AreaDeployments},
				Usage:        "/deployments [namespace=<namespace|all>] [name=<deployment>]",
			},
			Needs: []string{backend.AreaDeployments}, Handler: handleListDeployments,
			Type: evidencev1.EvidenceType_EVIDENCE_TYPE_K8S_RESOURCE, Domain: evidencev1.Domain_DOMAIN_COMPUTE,
		},
		{
			Def: &evidencev1.ToolDefinition{
				Intent: string(intent.ListJobs), Label: "Jobs", Icon: "schedule", SlashCommand: "/jobs", Category: catCluster,
				Description: "Jobs (start, completion, succeeded/failed, owning CronJob) and CronJobs (schedule, concurrency policy, last run): batch work that ran around the onset.",
				ParamsSchema: []*evidencev1.ToolParam{
					nsParam(false),
					ph(pString("name", "job or cronjob name or glob"), "nightly-*"),
				},
				Integrations: []string{backend.AreaResources},
				Usage:        "/jobs [namespace=<namespace|all>] [name=<job or cronjob>]",
			},
			Needs: []string{backend.AreaResources}, Handler: handleListJobs,
			Type: evidencev1.EvidenceType_EVIDENCE_TYPE_K8S_RESOURCE, Domain: evidencev1.Domain_DOMAIN_COMPUTE,
		},
		{
			Def: &evidencev1.ToolDefinition{
				Intent: string(intent.GetRecentChanges), Label: "Recent Changes", Icon: "published_with_changes", SlashCommand: "/changes", Category: catCluster,
				Description: "Objects created or edited in the window (ConfigMaps, Secrets' metadata, policies, budgets, autoscalers, priority classes, node labels, workload specs, custom resources), with the editing manager, the fields it owns and change annotations; controllers' status writes are left out.",
				ParamsSchema: withWindow(
					nsParam(false),
				),
				Integrations: []string{backend.AreaResources},
				Usage:        "/changes [namespace=<namespace|all>] [since=6h]",
			},
			Needs: []string{backend.AreaResources}, Handler: handleGetRecentChanges,
			Type: evidencev1.EvidenceType_EVIDENCE_TYPE_CHANGE, Domain: evidencev1.Domain_DOMAIN_COMPUTE,
		},
		{
			Def: &evidencev1.ToolDefinition{
				Intent: string(intent.GetNodeHealth), Label: "Node Health", Icon: "dns", SlashCommand: "/nodes", Category: catCluster,
				Description: "Node readiness, memory/disk/PID pressure, cordons, taints, capacity and allocatable.",
				ParamsSchema: []*evidencev1.ToolParam{
					ph(pString("name", "node name or glob (default: every node)"), "worker-*"),
					pString("label_selector", "label selector"),
				},
				Integrations: []string{backend.AreaNodes},
				Usage:        "/nodes [name=<node|glob>]",
			},
			Needs: []string{backend.AreaNodes}, Handler: handleGetNodeHealth,
			Type: evidencev1.EvidenceType_EVIDENCE_TYPE_K8S_RESOURCE, Domain: evidencev1.Domain_DOMAIN_COMPUTE,
		},
		{
			Def: &evidencev1.ToolDefinition{
				Intent: string(intent.GetDeployHistory), Label: "Deploy History", Icon: "history", SlashCommand: "/deploys", Category: catCode,
				Description: "Rollouts of a service (revision, previous revision, rollback, image, status) around the incident window.",
				ParamsSchema: withWindow(
					ctxDefault(pString("service", "service (default: every service)"), "active_service"),
					pString("namespace", "namespace"),
				),
				Integrations: []string{backend.AreaDeploys},
				Usage:        "/deploys [service=<service>] [since=24h]",
			},
			Needs: []string{backend.AreaDeploys}, Handler: handleGetDeployHistory,
			Type: evidencev1.EvidenceType_EVIDENCE_TYPE_CHANGE, Domain: evidencev1.Domain_DOMAIN_COMPUTE,
		},
		{
			Def: &evidencev1.ToolDefinition{
				Intent: string(intent.GetCommits), Label: "Recent Commits", Icon: "commit", SlashCommand: "/commits", Category: catCode,
				Description: "Commit summaries (files classified by change type) in the deployed range; filter by change type or by a symptom hint (timeout, database, config, ...).",
				ParamsSchema: withWindow(
					ctxDefault(pString("service", "service (default: the session's service; * for every service)"), "active_service"),
					pString("namespace", "namespace"),
					pSelect("change_type", "only commits of this change type", changeTypes...),
					ph(pString("hint", "symptom to explain; selects the relevant change types"), "db lock timeouts"),
					ph(pString("path", "only commits that changed these files (comma list of names or path suffixes); without a window, the last year"), "Validity.java"),
				),
				Integrations: []string{backend.AreaCommits},
				Usage:        "/commits [service=<service>|*] [change_type=db_migration|timeout_retry|config|dependency_bump|feature|refactor] [hint=<symptom>] [path=<file>,...]",
			},
			Needs: []string{backend.AreaCommits}, Handler: handleGetCommits,
			Type: evidencev1.EvidenceType_EVIDENCE_TYPE_CHANGE, Domain: evidencev1.Domain_DOMAIN_UNKNOWN,
		},
		{
			Def: &evidencev1.ToolDefinition{
				Intent: string(intent.GetCommitDiff), Label: "Commit Diff", Icon: "difference", SlashCommand: "/diff", Category: catCode,
				Description: "Fetch one commit's unified diff on demand.",
				ParamsSchema: []*evidencev1.ToolParam{
					req(ph(pString("sha", "commit sha (prefix allowed)"), "<sha>")),
					pString("service", "service the commit belongs to"),
				},
				Integrations: []string{backend.AreaCommits},
				Usage:        "/diff sha=<sha>",
			},
			Needs: []string{backend.AreaCommits}, Handler: handleGetCommitDiff,
			Type: evidencev1.EvidenceType_EVIDENCE_TYPE_CODE, Domain: evidencev1.Domain_DOMAIN_UNKNOWN,
		},
		{
			Def: &evidencev1.ToolDefinition{
				Intent: string(intent.QueryDBMetrics), Label: "Database Metrics", Icon: "database", SlashCommand: "/dbmetrics", Category: catMetrics,
				Description: "Managed-database metrics (CloudWatch: CPU, connections, IOPS, latency, storage, replica lag) with statistics and shape.",
				ParamsSchema: withWindow(
					pString("instance", "database instance id (default: every instance)"),
					ph(pString("metric", "metric name (default: every metric)"), "<metric>"),
				),
				Integrations: []string{backend.AreaDBMetrics},
				Usage:        "/dbmetrics [instance=<id>] [metric=<name>]",
			},
			Needs: []string{backend.AreaDBMetrics}, Handler: handleQueryDBMetrics,
			Type: evidencev1.EvidenceType_EVIDENCE_TYPE_METRIC, Domain: evidencev1.Domain_DOMAIN_STORAGE,
		},
		{
			Def: &evidencev1.ToolDefinition{
				Intent: string(intent.GetDBTopQueries), Label: "Top DB Queries", Icon: "query_stats", SlashCommand: "/topqueries", Category: catMetrics,
				Description:  "The statements carrying the database load (Performance Insights / pg_stat_statements) with their wait events.",
				ParamsSchema: withWindow(pString("instance", "database instance id (default: every instance)")),
				Integrations: []string{backend.AreaTopQueries},
				Usage:        "/topqueries [instance=<id>]",
			},
			Needs: []string{backend.AreaTopQueries}, Handler: handleGetDBTopQueries,
			Type: evidencev1.EvidenceType_EVIDENCE_TYPE_METRIC, Domain: evidencev1.Domain_DOMAIN_STORAGE,
		},
		{
			Def: &evidencev1.ToolDefinition{
				Intent: string(intent.GetDBEvents), Label: "Database Events", Icon: "notifications", SlashCommand: "/dbevents", Category: catMetrics,
				Description:  "Managed-database events (failover, storage, maintenance, parameter changes) in the window.",
				ParamsSchema: withWindow(pString("instance", "database instance id (default: every instance)")),
				Integrations: []string{backend.AreaDBEvents},
				Usage:        "/dbevents [instance=<id>]",
			},
			Needs: []string{backend.AreaDBEvents}, Handler: handleGetDBEvents,
			Type: evidencev1.EvidenceType_EVIDENCE_TYPE_LOG, Domain: evidencev1.Domain_DOMAIN_STORAGE,
		},
		{
			Def: &evidencev1.ToolDefinition{
				Intent: string(intent.ListMonitors), Label: "Monitors", Icon: "notifications_active", SlashCommand: "/monitors", Category: catMetrics,
				Description: "Alert rules and monitors with their state; filter by name, state or tag.",
				ParamsSchema: []*evidencev1.ToolParam{
					pString("name", "substring of the monitor name or query"),
					pString("state", "state (Alert, Warn, OK, No Data)"),
					pString("tag", "tag substring"),
				},
				Integrations: []string{backend.AreaMonitors},
				Secondary:    true,
				Usage:        "/monitors [name=<text>] [state=Alert]",
			},
			Needs: []string{backend.AreaMonitors}, Handler: handleListMonitors,
			Type: evidencev1.EvidenceType_EVIDENCE_TYPE_METRIC, Domain: evidencev1.Domain_DOMAIN_UNKNOWN,
		},
		{
			Def: &evidencev1.ToolDefinition{
				Intent: string(intent.GetStatusPage), Label: "Provider Status Page", Icon: "public", SlashCommand: "/statuspage", Category: catLogs,
				Description: "An outside provider's public status page (Atlassian Statuspage): its open and recent incidents and maintenances, their impact, affected components and latest update.",
				ParamsSchema: []*evidencev1.ToolParam{
					pString("provider", "substring of the status page's name or address (default: every configured page)"),
				},
				Integrations: []string{backend.AreaStatusPage},
				Secondary:    true,
				Usage:        "/statuspage [provider=<name>]",
			},
			Needs: []string{backend.AreaStatusPage}, Handler: handleGetStatusPage,
			Type: evidencev1.EvidenceType_EVIDENCE_TYPE_LOG, Domain: evidencev1.Domain_DOMAIN_NETWORK,
		},
	}
}

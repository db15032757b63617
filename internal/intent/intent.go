// Package intent names the tools of the registry: one vocabulary shared by
// the router (plans, slash commands), the brain (follow-ups), the critic
// (requested intents) and the tools service (the registry itself, which a
// test keeps equal to this list).
package intent

// Name is a tool's intent, as in ToolDefinition.intent and
// ExecuteToolRequest.intent.
type Name string

// The tools of the registry.
const (
	FetchPodLogs         Name = "fetch_pod_logs"
	QueryPrometheus      Name = "query_prometheus"
	SurveyMetrics        Name = "survey_metrics"
	DescribeResource     Name = "describe_resource"
	GetEvents            Name = "get_events"
	SearchLogs           Name = "search_logs"
	CheckPodStatus       Name = "check_pod_status"
	ReinvestigateService Name = "re_investigate_service"
	ListPods             Name = "list_pods"
	ListDeployments      Name = "list_deployments"
	ListJobs             Name = "list_jobs"
	GetRecentChanges     Name = "get_recent_changes"
	GetNodeHealth        Name = "get_node_health"
	GetDeployHistory     Name = "get_deploy_history"
	GetCommits           Name = "get_commits"
	GetCommitDiff        Name = "get_commit_diff"
	QueryDBMetrics       Name = "query_db_metrics"
	GetDBTopQueries      Name = "get_db_top_queries"
	GetDBEvents          Name = "get_db_events"
	ListMonitors         Name = "list_monitors"
	GetStatusPage        Name = "get_status_page"
	ListFiles            Name = "list_files"
	SearchCodebase       Name = "search_codebase"
	FetchCode            Name = "fetch_code"
)

// All lists every intent of the registry.
var All = []Name{
	FetchPodLogs, QueryPrometheus, SurveyMetrics, DescribeResource, GetEvents, SearchLogs, CheckPodStatus,
	ReinvestigateService, ListPods, ListDeployments, ListJobs, GetRecentChanges, GetNodeHealth,
	GetDeployHistory, GetCommits, GetCommitDiff, QueryDBMetrics, GetDBTopQueries, GetDBEvents, ListMonitors,
	GetStatusPage, ListFiles, SearchCodebase, FetchCode,
}

// String returns the intent as it travels on the wire.
func (n Name) String() string { return string(n) }

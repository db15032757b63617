// Package mcpserver exposes rcamesh to coding agents and chat tools over the
// Model Context Protocol (the official Go SDK): tools to start an
// investigation from an alert, run one steering command, list a session's
// pins, read a report and search past investigations, and the reports as
// resources. It calls the services through their gRPC clients, so it works
// against the local process (`/mcp` on the gateway) or a remote one
// (`rcamesh mcp -addr`, over stdio).
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	deliveryv1 "github.com/rcamesh/rcamesh/gen/rcamesh/delivery/v1"
	historyv1 "github.com/rcamesh/rcamesh/gen/rcamesh/history/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
)

// Tool names.
const (
	ToolStartInvestigation   = "start_investigation"
	ToolSteer                = "steer"
	ToolListPins             = "list_pins"
	ToolReadReport           = "read_report"
	ToolSearchInvestigations = "search_investigations"
)

// Resource URI templates.
const (
	ReportURITemplate        = "rcamesh://reports/{session_id}"
	InvestigationURITemplate = "rcamesh://investigations/{investigation_id}"
	reportPrefix             = "rcamesh://reports/"
	investigationPrefix      = "rcamesh://investigations/"
)

// Clients are the services the MCP server calls.
type Clients struct {
	Brain    brainv1.BrainServiceClient
	Router   routerv1.RouterServiceClient
	Delivery deliveryv1.DeliveryServiceClient
	History  historyv1.HistoryServiceClient
}

// ClientsFor builds clients over one connection (a process running every service).
func ClientsFor(cc grpc.ClientConnInterface) Clients {
	return Clients{
		Brain:    brainv1.NewBrainServiceClient(cc),
		Router:   routerv1.NewRouterServiceClient(cc),
		Delivery: deliveryv1.NewDeliveryServiceClient(cc),
		History:  historyv1.NewHistoryServiceClient(cc),
	}
}

// Options tune the server.
type Options struct {
	// Version reported to clients.
	Version string
	// WaitTimeout bounds start_investigation with wait=true.
	WaitTimeout time.Duration
}

type server struct {
	c   Clients
	opt Options
}

// New returns an MCP server over c.
func New(c Clients, opt Options) *mcp.Server {
	if opt.Version == "" {
		opt.Version = "dev"
	}
	if opt.WaitTimeout <= 0 {
		opt.WaitTimeout = 5 * time.Minute
	}
	s := &server{c: c, opt: opt}
	srv := mcp.NewServer(&mcp.Implementation{Name: "rcamesh", Title: "rcamesh AI SRE", Version: opt.Version}, &mcp.ServerOptions{
		Instructions: "rcamesh investigates production incidents: start_investigation with an alert payload (Alertmanager, Grafana, " +
			"Datadog, PagerDuty or generic JSON), steer a running session with one slash command or a plain-language request, " +
			"list its evidence pins, read its report, and search past investigations. Tools are read-only towards the inspected systems.",
	})
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(srv, &mcp.Tool{Name: ToolStartInvestigation, Title: "Start an investigation from an alert",
		Description: "Submit an alert payload; rcamesh classifies it, investigates (tools, critic) and delivers a report. " +
			"With wait=true the call returns the diagnosis; otherwise it returns the session to follow."}, s.startInvestigation)
	mcp.AddTool(srv, &mcp.Tool{Name: ToolSteer, Title: "Run one steering command in a session",
		Description: "Run one command in a session: a slash command such as `/logs namespace=payments pod=auth-*` or a plain-language " +
			"request such as `check DNS in this namespace`. The result becomes an evidence pin the critic revalidates."}, s.steer)
	mcp.AddTool(srv, &mcp.Tool{Name: ToolListPins, Title: "List a session's evidence pins", Annotations: readOnly,
		Description: "The evidence pins of a session in their latest state (claim, source tool, critic verdict)."}, s.listPins)
	mcp.AddTool(srv, &mcp.Tool{Name: ToolReadReport, Title: "Read a session's report", Annotations: readOnly,
		Description: "The markdown report of a session's latest investigation, with its confidence."}, s.readReport)
	mcp.AddTool(srv, &mcp.Tool{Name: ToolSearchInvestigations, Title: "Search past investigations", Annotations: readOnly,
		Description: "Search the investigation history by text, service, namespace, root-cause category and time, newest first, with paging."}, s.search)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "report", Title: "Investigation report", URITemplate: ReportURITemplate,
		MIMEType: "text/markdown", Description: "The markdown report of a session."}, s.reportResource)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "investigation", Title: "Past investigation", URITemplate: InvestigationURITemplate,
		MIMEType: "application/json", Description: "A past investigation in full: record, report, pins, critic verdicts."}, s.investigationResource)
	return srv
}

// HTTPHandler serves the server over MCP streamable HTTP.
func HTTPHandler(srv *mcp.Server) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
}

// StartInput is start_investigation's input.
type StartInput struct {
	Alert     map[string]any `json:"alert" jsonschema:"the alert payload as JSON (Alertmanager webhook, Grafana, Datadog, PagerDuty or generic)"`
	Source    string         `json:"source,omitempty" jsonschema:"payload format: empty detects it; else alertmanager, grafana, datadog, pagerduty, opensre or generic"`
	SessionID string         `json:"session_id,omitempty" jsonschema:"optional session id; by default derived from the alert fingerprint"`
	Wait      bool           `json:"wait,omitempty" jsonschema:"wait until the investigation finished and return its diagnosis"`
}

// Diagnosis is the short form of a diagnosis.
type Diagnosis struct {
	RootCause   string   `json:"root_cause"`
	Category    string   `json:"category"`
	Entity      string   `json:"entity,omitempty"`
	Confidence  float64  `json:"confidence"`
	Status      string   `json:"status"`
	Remediation []string `json:"remediation,omitempty"`
}

// StartOutput is start_investigation's result.
type StartOutput struct {
	SessionID       string     `json:"session_id"`
	InvestigationID string     `json:"investigation_id,omitempty"`
	Status          string     `json:"status"`
	Attached        bool       `json:"attached,omitempty"`
	Noise           bool       `json:"noise,omitempty"`
	Diagnosis       *Diagnosis `json:"diagnosis,omitempty"`
}

func enumName(s, prefix string) string { return strings.ToLower(strings.TrimPrefix(s, prefix)) }

func shortDiagnosis(d *investigationv1.Diagnosis) *Diagnosis {
	if d == nil {
		return nil
	}
	return &Diagnosis{RootCause: d.GetRootCause(), Category: enumName(d.GetCategory().String(), "ROOT_CAUSE_CATEGORY_"),
		Entity: d.GetRootCauseEntity(), Confidence: d.GetConfidence(), Status: enumName(d.GetStatus().String(), "DIAGNOSIS_STATUS_"),
		Remediation: d.GetRemediationSteps()}
}

func (s *server) startInvestigation(ctx context.Context, _ *mcp.CallToolRequest, in StartInput) (*mcp.CallToolResult, StartOutput, error) {
	if len(in.Alert) == 0 {
		return nil, StartOutput{}, errors.New("alert is required: pass the alert payload as a JSON object")
	}
	payload, err := structpb.NewStruct(in.Alert)
	if err != nil {
		return nil, StartOutput{}, fmt.Errorf("alert is not representable as JSON: %w", err)
	}
	if in.Wait {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.opt.WaitTimeout)
		defer cancel()
	}
	resp, err := s.c.Brain.SubmitAlert(ctx, &brainv1.SubmitAlertRequest{Source: in.Source, Payload: payload, SessionId: in.SessionID, Wait: in.Wait})
	if err != nil {
		return nil, StartOutput{}, err
	}
	return nil, StartOutput{SessionID: resp.GetSessionId(), InvestigationID: resp.GetInvestigationId(), Status: resp.GetStatus(),
		Attached: resp.GetAttached(), Noise: resp.GetNoise(), Diagnosis: shortDiagnosis(resp.GetDiagnosis())}, nil
}

// SteerInput is steer's input.
type SteerInput struct {
	SessionID string `json:"session_id" jsonschema:"the session to steer"`
	Command   string `json:"command" jsonschema:"a slash command (/logs namespace=payments pod=auth-*) or a plain-language request"`
}

// SteerOutput is steer's result.
type SteerOutput struct {
	Status  string         `json:"status"`
	Path    string         `json:"path"`
	Intent  string         `json:"intent,omitempty"`
	Params  map[string]any `json:"params,omitempty"`
	PinID   string         `json:"pin_id,omitempty"`
	Command string         `json:"command,omitempty"`
	Answer  string         `json:"answer,omitempty"`
	Error   string         `json:"error,omitempty"`
}

func (s *server) steer(ctx context.Context, _ *mcp.CallToolRequest, in SteerInput) (*mcp.CallToolResult, SteerOutput, error) {
	cmd := strings.TrimSpace(in.Command)
	if cmd == "" {
		return nil, SteerOutput{}, errors.New("command is required")
	}
	req := &routerv1.InvestigateRequest{SessionId: in.SessionID}
	if strings.HasPrefix(cmd, "/") {
		req.Input = &routerv1.InvestigateRequest_Command{Command: cmd}
	} else {
		req.Input = &routerv1.InvestigateRequest_Query{Query: cmd}
	}
	resp, err := s.c.Router.Investigate(ctx, req)
	if err != nil {
		return nil, SteerOutput{}, err
	}
	return nil, SteerOutput{Status: enumName(resp.GetStatus().String(), "INVESTIGATE_STATUS_"), Path: enumName(resp.GetPathUsed().String(), "PATH_USED_"),
		Intent: resp.GetIntent(), Params: resp.GetParams().AsMap(), PinID: resp.GetPinId(), Command: resp.GetCommand(),
		Answer: resp.GetAnswer(), Error: resp.GetError()}, nil
}

// SessionInput names a session.
type SessionInput struct {
	SessionID string `json:"session_id" jsonschema:"the session id"`
}

// Pin is the short form of an evidence pin.
type Pin struct {
	ID         string  `json:"id"`
	Claim      string  `json:"claim"`
	SourceTool string  `json:"source_tool"`
	Severity   string  `json:"severity,omitempty"`
	Verdict    string  `json:"verdict"`
	Rationale  string  `json:"critic_rationale,omitempty"`
	Confidence float64 `json:"confidence,omitempty"`
	NoData     bool    `json:"no_data,omitempty"`
	Error      string  `json:"error,omitempty"`
}

// PinsOutput is list_pins' result.
type PinsOutput struct {
	Pins []Pin `json:"pins"`
}

func (s *server) listPins(ctx context.Context, _ *mcp.CallToolRequest, in SessionInput) (*mcp.CallToolResult, PinsOutput, error) {
	resp, err := s.c.Brain.ListPins(ctx, &brainv1.ListPinsRequest{SessionId: in.SessionID})
	if err != nil {
		return nil, PinsOutput{}, err
	}
	out := PinsOutput{Pins: []Pin{}}
	for _, p := range resp.GetPins() {
		out.Pins = append(out.Pins, Pin{ID: p.GetId(), Claim: p.GetClaim(), SourceTool: p.GetSourceTool(),
			Severity: enumName(p.GetSeverity().String(), "SEVERITY_"), Verdict: enumName(p.GetValidationStatus().String(), "VALIDATION_STATUS_"),
			Rationale: p.GetCriticRationale(), Confidence: p.GetConfidence(), NoData: p.GetNoData(), Error: p.GetError()})
	}
	return nil, out, nil
}

// ReportOutput is read_report's result.
type ReportOutput struct {
	SessionID       string     `json:"session_id"`
	InvestigationID string     `json:"investigation_id"`
	Markdown        string     `json:"markdown"`
	Confidence      float64    `json:"confidence"`
	Silent          bool       `json:"silent"`
	Diagnosis       *Diagnosis `json:"diagnosis,omitempty"`
}

func (s *server) readReport(ctx context.Context, _ *mcp.CallToolRequest, in SessionInput) (*mcp.CallToolResult, ReportOutput, error) {
	resp, err := s.c.Delivery.GetReport(ctx, &deliveryv1.GetReportRequest{SessionId: in.SessionID})
	if err != nil {
		return nil, ReportOutput{}, err
	}
	r := resp.GetReport()
	out := ReportOutput{SessionID: r.GetSessionId(), InvestigationID: r.GetInvestigationId(), Markdown: r.GetMarkdown(),
		Confidence: r.GetConfidence(), Silent: r.GetSilent(), Diagnosis: shortDiagnosis(r.GetDiagnosis())}
	// The markdown is the content a human reads; the structure is the output.
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: r.GetMarkdown()}}}, out, nil
}

// SearchInput is search_investigations' input.
type SearchInput struct {
	Query     string `json:"query,omitempty" jsonschema:"full-text search over alerts, diagnoses and reports"`
	Service   string `json:"service,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Category  string `json:"category,omitempty" jsonschema:"root-cause category: configuration_error, code_defect, data_quality, resource_exhaustion, dependency_failure, infrastructure, healthy, unknown"`
	Since     string `json:"since,omitempty" jsonschema:"RFC 3339 time: investigations started at or after it"`
	Until     string `json:"until,omitempty" jsonschema:"RFC 3339 time: investigations started before it"`
	PageSize  int    `json:"page_size,omitempty" jsonschema:"1-200, default 20"`
	PageToken string `json:"page_token,omitempty" jsonschema:"next_page_token of the previous call"`
}

// PastInvestigation is one search hit.
type PastInvestigation struct {
	InvestigationID string    `json:"investigation_id"`
	SessionID       string    `json:"session_id"`
	Title           string    `json:"title"`
	Service         string    `json:"service,omitempty"`
	Namespace       string    `json:"namespace,omitempty"`
	Category        string    `json:"category"`
	Status          string    `json:"status"`
	RootCause       string    `json:"root_cause"`
	Confidence      float64   `json:"confidence"`
	StartedAt       time.Time `json:"started_at"`
	URI             string    `json:"uri"`
}

// SearchOutput is search_investigations' result.
type SearchOutput struct {
	Investigations []PastInvestigation `json:"investigations"`
	NextPageToken  string              `json:"next_page_token,omitempty"`
}

func parseTime(field, v string) (*timestamppb.Timestamp, error) {
	if v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return nil, fmt.Errorf("%s %q is not an RFC 3339 time (e.g. 2026-03-09T14:00:00Z)", field, v)
	}
	return timestamppb.New(t), nil
}

func (s *server) search(ctx context.Context, _ *mcp.CallToolRequest, in SearchInput) (*mcp.CallToolResult, SearchOutput, error) {
	req := &historyv1.ListInvestigationsRequest{Query: in.Query, Service: in.Service, Namespace: in.Namespace,
		PageSize: int32(min(max(in.PageSize, 0), 1000)), PageToken: in.PageToken}
	if in.Category != "" {
		v, ok := investigationv1.RootCauseCategory_value["ROOT_CAUSE_CATEGORY_"+strings.ToUpper(in.Category)]
		if !ok {
			return nil, SearchOutput{}, fmt.Errorf("unknown category %q", in.Category)
		}
		req.Category = investigationv1.RootCauseCategory(v)
	}
	var err error
	if req.Since, err = parseTime("since", in.Since); err != nil {
		return nil, SearchOutput{}, err
	}
	if req.Until, err = parseTime("until", in.Until); err != nil {
		return nil, SearchOutput{}, err
	}
	resp, err := s.c.History.ListInvestigations(ctx, req)
	if err != nil {
		return nil, SearchOutput{}, err
	}
	out := SearchOutput{Investigations: []PastInvestigation{}, NextPageToken: resp.GetNextPageToken()}
	for _, it := range resp.GetInvestigations() {
		out.Investigations = append(out.Investigations, PastInvestigation{InvestigationID: it.GetInvestigationId(), SessionID: it.GetSessionId(),
			Title: it.GetTitle(), Service: it.GetService(), Namespace: it.GetNamespace(),
			Category: enumName(it.GetCategory().String(), "ROOT_CAUSE_CATEGORY_"), Status: enumName(it.GetStatus().String(), "DIAGNOSIS_STATUS_"),
			RootCause: it.GetRootCause(), Confidence: it.GetConfidence(), StartedAt: it.GetStartedAt().AsTime(),
			URI: investigationPrefix + it.GetInvestigationId()})
	}
	return nil, out, nil
}

func (s *server) reportResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	sid, ok := strings.CutPrefix(uri, reportPrefix)
	if !ok || sid == "" {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	resp, err := s.c.Delivery.GetReport(ctx, &deliveryv1.GetReportRequest{SessionId: sid})
	if err != nil {
		return nil, resourceError(uri, err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: resp.GetReport().GetMarkdown()}}}, nil
}

func (s *server) investigationResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, ok := strings.CutPrefix(uri, investigationPrefix)
	if !ok || id == "" {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	resp, err := s.c.History.GetInvestigation(ctx, &historyv1.GetInvestigationRequest{InvestigationId: id})
	if err != nil {
		return nil, resourceError(uri, err)
	}
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(resp)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}

// resourceError maps a NotFound (or a malformed id) to MCP's resource-not-found error.
func resourceError(uri string, err error) error {
	switch status.Code(err) {
	case codes.NotFound, codes.InvalidArgument:
		return mcp.ResourceNotFoundError(uri)
	}
	return err
}

package router

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/llm"
	"github.com/rcamesh/rcamesh/internal/mesh"
	"github.com/rcamesh/rcamesh/internal/paging"
)

// contextFromMetadata reads a RouterContext sent as protojson in the
// x-rcamesh-context metadata (the GET calls have no body).
func contextFromMetadata(ctx context.Context) (*evidencev1.RouterContext, error) {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return nil, nil
	}
	vals := md.Get(ContextMetadataKey)
	if len(vals) == 0 || strings.TrimSpace(vals[0]) == "" {
		return nil, nil
	}
	rc := &evidencev1.RouterContext{}
	if err := protojson.Unmarshal([]byte(vals[0]), rc); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s metadata is not a RouterContext in JSON: %v", ContextMetadataKey, err)
	}
	return rc, nil
}

// knowledge is what the session knows: from its context and its pins.
type knowledge struct {
	namespaces, services, pods []string
}

func addUnique(xs []string, seen map[string]bool, vs ...string) []string {
	for _, v := range vs {
		v = strings.TrimSpace(v)
		if v == "" || seen[v] || strings.ContainsAny(v, "*") {
			continue
		}
		seen[v] = true
		xs = append(xs, v)
	}
	return xs
}

func sessionKnowledge(rc *evidencev1.RouterContext, pins []*evidencev1.EvidencePin) knowledge {
	var k knowledge
	sn, ss, sp := map[string]bool{}, map[string]bool{}, map[string]bool{}
	k.namespaces = addUnique(k.namespaces, sn, rc.GetActiveNamespace())
	k.namespaces = addUnique(k.namespaces, sn, rc.GetDiscoveredNamespaces()...)
	k.services = addUnique(k.services, ss, rc.GetActiveService())
	k.services = addUnique(k.services, ss, rc.GetDiscoveredServices()...)
	k.pods = addUnique(k.pods, sp, rc.GetActivePod())
	k.pods = addUnique(k.pods, sp, rc.GetPodNames()...)
	for _, p := range pins {
		if ns := p.GetNamespace(); !mesh.EveryNamespace(ns) {
			// A cluster-wide call's pin names no namespace the session is in.
			k.namespaces = addUnique(k.namespaces, sn, ns)
		}
		k.services = addUnique(k.services, ss, p.GetService())
		var pods []facts.Pod
		if ok, _ := facts.Decode(p.GetMetadata(), facts.KeyPods, &pods); ok {
			for _, pod := range pods {
				k.pods = addUnique(k.pods, sp, pod.Name)
				k.namespaces = addUnique(k.namespaces, sn, pod.Namespace)
			}
		}
		var resolved string
		if ok, _ := facts.Decode(p.GetMetadata(), facts.KeyResolvedPod, &resolved); ok {
			k.pods = addUnique(k.pods, sp, resolved)
		}
	}
	return k
}

// pins returns the session's pins; an unreachable brain or an unknown session
// gives none.
func (s *Service) pins(ctx context.Context, session string) []*evidencev1.EvidencePin {
	if s.deps.Brain == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.ToolsTimeout)
	defer cancel()
	pins, err := mesh.AllPins(cctx, s.deps.Brain, session)
	if err != nil {
		switch status.Code(err) {
		case codes.NotFound, codes.Unavailable, codes.Unimplemented, codes.DeadlineExceeded:
		default:
			s.log.WarnContext(ctx, "listing the session's pins", "session", session, "error", err)
		}
		return nil
	}
	return pins
}

// Page sizes of ListTools (those of the tools service's ListToolDefinitions).
const (
	defaultToolPage = 100
	maxToolPage     = 500
)

// ListTools returns the registry as the session sees it: options filled from
// what the session knows, and why a tool is unavailable.
func (s *Service) ListTools(ctx context.Context, req *routerv1.ListToolsRequest) (*routerv1.ListToolsResponse, error) {
	session, err := sessionOf(req.GetSessionId(), nil)
	if err != nil {
		return nil, err
	}
	size, err := paging.Size(req.GetPageSize(), 0, defaultToolPage, maxToolPage)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	offset, err := paging.Offset("tools", req.GetPageToken())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	mdrc, err := contextFromMetadata(ctx)
	if err != nil {
		return nil, err
	}
	rc := s.sessionContext(session, mdrc)
	reg, err := s.registry(ctx, session)
	if err != nil {
		return nil, err
	}
	k := sessionKnowledge(rc, s.pins(ctx, session))
	eff := proto.CloneOf(rc)
	if len(eff.DiscoveredNamespaces) == 0 {
		eff.DiscoveredNamespaces = k.namespaces
	}
	if len(eff.DiscoveredServices) == 0 {
		eff.DiscoveredServices = k.services
	}
	from, to, next := paging.Page("tools", len(reg.Tools), offset, size)
	out := &routerv1.ListToolsResponse{Tools: make([]*evidencev1.ToolDefinition, 0, to-from), NextPageToken: next}
	for _, t := range reg.Tools[from:to] {
		out.Tools = append(out.Tools, sessionView(t, eff, k))
	}
	return out, nil
}

// sessionView clones a definition with session options and availability.
func sessionView(t *evidencev1.ToolDefinition, rc *evidencev1.RouterContext, k knowledge) *evidencev1.ToolDefinition {
	c := proto.CloneOf(t)
	for _, p := range c.ParamsSchema {
		var from []string
		switch normalizeCtxField(p.GetDefaultFromContext()) {
		case "active_namespace":
			from = k.namespaces
		case "active_service":
			from = k.services
		case "active_pod":
			from = k.pods
		default:
			switch p.GetName() {
			case "namespace":
				from = k.namespaces
			case "pod":
				from = k.pods
			case "service":
				from = k.services
			}
			if p.GetType() != evidencev1.ParamType_PARAM_TYPE_SELECT {
				from = nil
			}
		}
		if len(from) > 0 && !strictOptions(p) {
			seen := map[string]bool{}
			p.Options = addUnique(nil, seen, append(append([]string{}, p.GetOptions()...), from...)...)
		}
	}
	if c.Usage == "" {
		c.Usage = usageOf(t)
	}
	if !c.GetAvailable() {
		c.UnavailableReason = unavailableReason(t)
		return c
	}
	var missing []string
	for _, f := range c.GetRequiresContext() {
		if _, ok := contextValue(rc, f); !ok {
			missing = append(missing, fmt.Sprintf("%s (no %s in the context)", f, contextLabel(f)))
		}
	}
	if len(missing) > 0 {
		c.Available = false
		c.UnavailableReason = "requires context: " + strings.Join(missing, ", ")
	}
	return c
}

// Chat answers a message: a slash command runs on the fast path, anything
// else on the smart path; a question no tool answers gets what the session's
// pins say.
func (s *Service) Chat(ctx context.Context, req *routerv1.ChatRequest) (*routerv1.ChatResponse, error) {
	session, err := sessionOf(req.GetSessionId(), req.GetContext())
	if err != nil {
		return nil, err
	}
	msg := strings.TrimSpace(req.GetMessage())
	if msg == "" {
		return nil, status.Error(codes.InvalidArgument, "message is required")
	}
	if len(msg) > s.cfg.MaxInputBytes {
		return nil, status.Errorf(codes.InvalidArgument, "message is %d bytes; the limit is %d", len(msg), s.cfg.MaxInputBytes)
	}
	rc := s.sessionContext(session, req.GetContext())
	reg, err := s.registry(ctx, session)
	if err != nil {
		return nil, err
	}
	var res *routed
	if strings.HasPrefix(msg, "/") {
		res, err = s.runCommand(ctx, session, reg, msg, rc)
		if err != nil {
			if status.Code(err) != codes.InvalidArgument {
				return nil, err
			}
			m := status.Convert(err).Message()
			return &routerv1.ChatResponse{
				Reply: "That command did not run: " + m,
				Action: &routerv1.InvestigateResponse{
					PathUsed: routerv1.PathUsed_PATH_USED_FAST,
					Status:   routerv1.InvestigateStatus_INVESTIGATE_STATUS_ERROR,
					Error:    m,
				},
			}, nil
		}
	} else {
		res, err = s.runQuery(ctx, session, reg, msg, rc)
		if err != nil {
			return nil, err
		}
	}
	out := &routerv1.ChatResponse{Action: res.resp, CitedPinIds: res.pinIDs}
	switch res.resp.GetStatus() {
	case routerv1.InvestigateStatus_INVESTIGATE_STATUS_EXECUTING:
		var b strings.Builder
		fmt.Fprintf(&b, "Running `%s` (%s) as pin %s", res.resp.GetCommand(), res.resp.GetIntent(), res.resp.GetPinId())
		if len(res.resp.GetFilledFromContext()) > 0 {
			fmt.Fprintf(&b, "; from your context: %s", strings.Join(res.resp.GetFilledFromContext(), ", "))
		}
		b.WriteString(".")
		for i, c := range res.companions {
			fmt.Fprintf(&b, " Also running `%s` as pin %s.", CommandString(c), res.pinIDs[i+1])
		}
		b.WriteString(" The result arrives as an evidence pin; the critic validates it against what is already known.")
		out.Reply = b.String()
	case routerv1.InvestigateStatus_INVESTIGATE_STATUS_ERROR:
		out.Reply = "Nothing ran: " + res.resp.GetError()
	default:
		out.Reply = res.resp.GetAnswer()
		if res.resp.GetIntent() == "" && (req.IncludeRecentPins == nil || req.GetIncludeRecentPins()) {
			if reply, cited := s.answerFromPins(ctx, session, msg, rc); reply != "" {
				out.Reply, out.CitedPinIds = reply, cited
			}
		}
	}
	return out, nil
}

var reFindingsQuestion = regexp.MustCompile(`\b(summar(?:y|ise|ize)|what do we know|findings?|so far|root cause|what happened|evidence|status of the investigation|what did you find|conclusion)\b`)

// answerFromPins answers a question with the session's evidence in view:
// through the model when configured, else by listing the strongest pins
// when the question is about the findings.
func (s *Service) answerFromPins(ctx context.Context, session, question string, rc *evidencev1.RouterContext) (string, []string) {
	pins := s.pins(ctx, session)
	if len(pins) == 0 {
		return "", nil
	}
	ranked := rankPins(pins)
	if len(ranked) > 12 {
		ranked = ranked[:12]
	}
	if s.deps.LLM != nil {
		var b strings.Builder
		b.WriteString("You assist an SRE during an incident investigation. Answer the question using only these evidence pins; cite pin ids in square brackets. If the pins do not answer it, say so.\n\nPins:\n")
		for _, p := range ranked {
			fmt.Fprintf(&b, "[%s] %s (%s, severity %s, %s)\n", p.GetId(), truncate(p.GetClaim(), 300), p.GetSourceTool(),
				strings.TrimPrefix(p.GetSeverity().String(), "SEVERITY_"), strings.TrimPrefix(p.GetValidationStatus().String(), "VALIDATION_STATUS_"))
		}
		cctx, cancel := context.WithTimeout(ctx, s.cfg.SmartTimeout)
		defer cancel()
		resp, err := s.deps.LLM.Complete(cctx, llm.Request{
			Messages:  []llm.Message{{Role: llm.RoleSystem, Content: b.String()}, {Role: llm.RoleUser, Content: question}},
			MaxTokens: 600,
			Purpose:   "chat",
		})
		if err == nil && strings.TrimSpace(resp.Message.Content) != "" {
			var cited []string
			for _, p := range ranked {
				if strings.Contains(resp.Message.Content, p.GetId()) {
					cited = append(cited, p.GetId())
				}
			}
			return strings.TrimSpace(resp.Message.Content), cited
		}
		if err != nil {
			s.log.WarnContext(ctx, "chat: model answer failed; using the deterministic summary", "error", err)
		}
	}
	if !reFindingsQuestion.MatchString(strings.ToLower(question)) {
		return "", nil
	}
	var b strings.Builder
	b.WriteString("What the evidence shows so far (strongest first):\n")
	var cited []string
	for i, p := range ranked {
		if i == 5 {
			break
		}
		fmt.Fprintf(&b, "- [%s] %s (%s", p.GetId(), truncate(firstNonEmpty(p.GetClaim(), p.GetSourceTool()), 240), p.GetSourceTool())
		if p.GetValidationStatus() == evidencev1.ValidationStatus_VALIDATION_STATUS_VALIDATED {
			b.WriteString(", validated")
		}
		b.WriteString(")\n")
		cited = append(cited, p.GetId())
	}
	return strings.TrimRight(b.String(), "\n"), cited
}

// rankPins orders pins by severity (critical first), then newest first; the
// critic's rejected pins go last.
func rankPins(pins []*evidencev1.EvidencePin) []*evidencev1.EvidencePin {
	out := make([]*evidencev1.EvidencePin, 0, len(pins))
	idx := map[*evidencev1.EvidencePin]int{}
	for i, p := range pins {
		if p == nil {
			continue
		}
		idx[p] = i
		out = append(out, p)
	}
	sev := func(p *evidencev1.EvidencePin) int {
		v := int(p.GetSeverity())
		if v == 0 {
			v = 6
		}
		if p.GetValidationStatus() == evidencev1.ValidationStatus_VALIDATION_STATUS_REJECTED {
			v += 10
		}
		return v
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := sev(out[i]), sev(out[j])
		if a != b {
			return a < b
		}
		return idx[out[i]] > idx[out[j]]
	})
	return out
}

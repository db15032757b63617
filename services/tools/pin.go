package tools

import (
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// PinHints carry pin context a handler resolved (a wildcard pod, the
// namespace of a node's pods, ...). Empty fields fall back to params, then
// the RouterContext.
type PinHints struct {
	Namespace, Service, ResourceName string
}

// PinFactory is the EvidencePinFactory: one ToolResult becomes one
// EvidencePin, the unit the critic validates and every claim cites.
type PinFactory struct {
	// Now stamps pins; nil means time.Now.
	Now func() time.Time
}

// FromToolResult converts a tool result into its pin (version 1, pending critic).
func (f PinFactory) FromToolResult(req *toolsv1.ExecuteToolRequest, res *evidencev1.ToolResult, params Params, w Window, hints PinHints) *evidencev1.EvidencePin {
	now := time.Now
	if f.Now != nil {
		now = f.Now
	}
	rc := req.GetContext()
	id := strings.TrimSpace(req.GetPinId())
	if id == "" {
		id = PinID(req.GetSessionId(), req.GetInvestigationId(), res.GetIntent(), params.Canonical())
	}
	source := evidencev1.Source_SOURCE_AUTO
	switch req.GetTriggeredBy() {
	case evidencev1.TriggeredBy_TRIGGERED_BY_USER_CHAT, evidencev1.TriggeredBy_TRIGGERED_BY_QUICK_ACTION:
		source = evidencev1.Source_SOURCE_MANUAL
	}
	triggered := req.GetTriggeredBy()
	if triggered == evidencev1.TriggeredBy_TRIGGERED_BY_UNSPECIFIED {
		triggered = evidencev1.TriggeredBy_TRIGGERED_BY_AUTOMATED_PIPELINE
	}
	pin := &evidencev1.EvidencePin{
		Id:                     id,
		Claim:                  Claim(res),
		Source:                 source,
		SourceAgent:            req.GetSourceAgent(),
		SourceTool:             res.GetIntent(),
		TriggeredBy:            triggered,
		EvidenceType:           res.GetEvidenceType(),
		SupportingEvidence:     append([]string(nil), res.GetEvidenceSnippets()...),
		RawOutput:              res.GetRawOutput(),
		Confidence:             Confidence(res),
		Severity:               res.GetSeverity(),
		Domain:                 res.GetDomain(),
		ValidationStatus:       evidencev1.ValidationStatus_VALIDATION_STATUS_PENDING_CRITIC,
		Namespace:              first(hints.Namespace, params.String("namespace"), rc.GetActiveNamespace()),
		Service:                first(hints.Service, params.String("service"), rc.GetActiveService()),
		ResourceName:           first(hints.ResourceName, metaString(res, facts.KeyResolvedPod), params.String("pod"), params.String("name"), params.String("instance"), params.String("sha")),
		Timestamp:              timestamppb.New(now()),
		TimeWindow:             w.Proto(),
		SessionId:              req.GetSessionId(),
		Params:                 params.Struct(),
		Metadata:               res.GetMetadata(),
		Sources:                append([]string(nil), res.GetSources()...),
		NoData:                 res.GetNoData(),
		Success:                res.GetSuccess(),
		Error:                  res.GetError(),
		RawOutputTruncated:     res.GetRawOutputTruncated(),
		RawOutputOriginalBytes: res.GetRawOutputOriginalBytes(),
		Version:                1,
		InvestigationId:        req.GetInvestigationId(),
	}
	if pin.Domain == evidencev1.Domain_DOMAIN_UNSPECIFIED {
		pin.Domain = evidencev1.Domain_DOMAIN_UNKNOWN
	}
	return pin
}

// Claim is one sentence derived from the result: the summary's first sentence.
func Claim(res *evidencev1.ToolResult) string {
	s := strings.TrimSpace(res.GetSummary())
	if s == "" {
		if !res.GetSuccess() {
			return "Tool " + res.GetIntent() + " failed: " + res.GetError()
		}
		return "Tool " + res.GetIntent() + " returned no summary."
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	s = strings.TrimSpace(s)
	if len(s) > 300 {
		s = truncUTF8(s, 297) + "..."
	}
	return s
}

// Confidence is 0-100: how much the pin can be relied on as stated. A
// failed call is 0; an empty answer is weaker evidence than a finding; raw
// findings of high severity are facts as observed.
func Confidence(res *evidencev1.ToolResult) float64 {
	switch {
	case !res.GetSuccess():
		return 0
	case res.GetNoData():
		return 60
	}
	switch res.GetSeverity() {
	case evidencev1.Severity_SEVERITY_CRITICAL:
		return 100
	case evidencev1.Severity_SEVERITY_HIGH:
		return 95
	case evidencev1.Severity_SEVERITY_MEDIUM:
		return 85
	case evidencev1.Severity_SEVERITY_LOW:
		return 75
	}
	return 70
}

func metaString(res *evidencev1.ToolResult, key string) string {
	if v, ok := res.GetMetadata().GetFields()[key]; ok {
		return v.GetStringValue()
	}
	return ""
}

func first(vals ...string) string {
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

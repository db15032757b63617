package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"google.golang.org/protobuf/proto"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
)

// subInvestigationID derives the id of a sub-investigation, so a retried
// call starts the same one (the brain treats the id as idempotency key).
func subInvestigationID(session, parentInvestigation, namespace, service string) string {
	h := sha256.Sum256([]byte(session + "\x00" + parentInvestigation + "\x00" + namespace + "\x00" + service))
	return "sub_" + hex.EncodeToString(h[:10])
}

func handleReInvestigate(ctx context.Context, s *Service, c *Call, r *Result) error {
	svc := c.Params.String("service")
	ns := c.Params.String("namespace")
	r.EvidenceType, r.Domain = evidencev1.EvidenceType_EVIDENCE_TYPE_K8S_RESOURCE, evidencev1.Domain_DOMAIN_UNKNOWN
	r.Namespace, r.Service, r.ResourceName = ns, svc, svc
	rc := &evidencev1.RouterContext{}
	if c.Context != nil {
		rc = proto.Clone(c.Context).(*evidencev1.RouterContext)
	}
	rc.ActiveNamespace, rc.ActiveService, rc.ActivePod = ns, svc, ""
	rc.TimeWindow = c.Window.Proto()
	id := subInvestigationID(c.SessionID, c.InvestigationID, ns, svc)
	resp, err := s.brain.StartInvestigation(ctx, &brainv1.StartInvestigationRequest{
		SessionId:       c.SessionID,
		Service:         svc,
		Namespace:       ns,
		ParentSessionId: c.SessionID,
		Context:         rc,
		InvestigationId: id,
	})
	if err != nil {
		return fmt.Errorf("start sub-investigation of %s/%s: %w", ns, svc, err)
	}
	subID := first(resp.GetInvestigationId(), id)
	r.Put("sub_investigation_id", subID)
	r.Put("sub_session_id", first(resp.GetSessionId(), c.SessionID))
	r.Put("parent_session_id", c.SessionID)
	r.Put("parent_investigation_id", c.InvestigationID)
	r.Put("status", resp.GetStatus())
	r.Severity = evidencev1.Severity_SEVERITY_INFO
	r.Rawf("sub-investigation %s of service %s in namespace %s started (status %s); its pins merge into session %s", subID, svc, ns, first(resp.GetStatus(), "started"), c.SessionID)
	r.Snippet(fmt.Sprintf("sub-investigation %s: service %s namespace %s", subID, svc, ns))
	r.Summary = fmt.Sprintf("Started sub-investigation %s of service %s in namespace %s; its evidence merges into this session.", subID, svc, ns)
	if d := resp.GetDiagnosis(); d != nil && d.GetRootCause() != "" {
		r.Summary += " Its diagnosis: " + d.GetRootCause()
	}
	return nil
}

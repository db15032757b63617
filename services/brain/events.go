package brain

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/guardrail"
	"github.com/rcamesh/rcamesh/internal/mesh"
	"github.com/rcamesh/rcamesh/internal/metrics"
)

// publishLifecycle publishes a lifecycle event; failures are logged (the
// event stream is a view of the record, which holds the same facts).
func (s *Service) publishLifecycle(ctx context.Context, sid, invID string, kind evidencev1.LifecycleEventKind, stage, msg string, details map[string]any) {
	if s.bus == nil {
		return
	}
	ev := &evidencev1.LifecycleEvent{
		Kind: kind, SessionId: sid, InvestigationId: invID, Stage: stage, Message: msg, Time: timestamppb.New(s.now()),
	}
	if len(details) > 0 {
		if st, err := structpb.NewStruct(sanitize(details)); err == nil {
			ev.Details = st
		} else {
			s.log.WarnContext(ctx, "lifecycle details not encodable", "err", err)
		}
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.CallTimeout)
	defer cancel()
	if _, err := s.bus.PublishLifecycle(pctx, ev); err != nil {
		s.log.WarnContext(ctx, "publish lifecycle event failed", "kind", kind.String(), "session_id", sid, "err", err)
	}
}

// sanitize converts details into structpb-compatible values.
func sanitize(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch t := v.(type) {
		case int:
			out[k] = float64(t)
		case int32:
			out[k] = float64(t)
		case int64:
			out[k] = float64(t)
		case uint64:
			out[k] = float64(t)
		case []string:
			l := make([]any, len(t))
			for i, x := range t {
				l[i] = x
			}
			out[k] = l
		case nil, string, bool, float64:
			out[k] = t
		default:
			out[k] = fmt.Sprint(t)
		}
	}
	return out
}

// isService reports whether name is one of the mesh's services.
func isService(name string) bool { return slices.Contains(mesh.All, name) }

// trip records a guardrail trip in the record and publishes it.
func (s *Service) trip(ctx context.Context, st *invState, t *investigationv1.GuardrailTrip) {
	if t == nil {
		return
	}
	if t.Time == nil {
		t.Time = timestamppb.New(s.now())
	}
	st.rec.GuardrailTrips = append(st.rec.GuardrailTrips, t)
	metrics.GuardrailTrips.WithLabelValues(metrics.Label(t.GetGuardrail(), metrics.Identifier), metrics.Label(t.GetOwner(), isService)).Inc()
	s.publishLifecycle(ctx, st.rec.GetSessionId(), st.rec.GetInvestigationId(), evidencev1.LifecycleEventKind_LIFECYCLE_EVENT_KIND_GUARDRAIL,
		"", fmt.Sprintf("%s (%s): %s", t.GetGuardrail(), t.GetOwner(), t.GetDetail()),
		map[string]any{"guardrail": t.GetGuardrail(), "owner": t.GetOwner(), "limit": t.GetLimit(), "value": t.GetValue()})
}

func (s *Service) brainTrip(ctx context.Context, st *invState, g investigationv1.Guardrail, detail string, limit, value float64) {
	s.trip(ctx, st, guardrail.Trip(g, detail, limit, value, s.now()))
}

// tripsFrom records trips another service reported (each keeps its owner).
func (s *Service) tripsFrom(ctx context.Context, st *invState, trips []*investigationv1.GuardrailTrip) {
	for _, t := range trips {
		s.trip(ctx, st, proto.CloneOf(t))
	}
}

// limitsFrom copies the live limits another service reported into the
// record's Guardrails.
func limitsFrom(st *invState, limits *investigationv1.Guardrails) {
	if st.rec.Guardrails == nil {
		st.rec.Guardrails = &investigationv1.Guardrails{}
	}
	guardrail.Merge(st.rec.Guardrails, limits)
}

func appendUnique(list []string, v string) []string {
	for _, x := range list {
		if x == v {
			return list
		}
	}
	return append(list, v)
}

package brain

import (
	"context"

	"github.com/rcamesh/rcamesh/internal/facts"
	"github.com/rcamesh/rcamesh/internal/series"
)

// surveyLookback is how far back (a duration the survey's since takes) a
// metric survey reads again when every series of the incident window was
// flat.
const surveyLookback = "12h"

// longSurvey: when a survey over the incident window found series but
// every one of them flat, the same survey again over surveyLookback. A
// flat window says nothing of when things changed: an alert that fires
// on a condition that built up for hours (a balance spent at 04:00, a
// queue that has grown since) sees, in its own window, every series
// already at its degraded level and no baseline to measure it against.
// An SRE widens the dashboard's range; so does the brain, once per
// survey scope.
func (s *Service) longSurvey(ctx context.Context, st *invState) []pendingCall {
	for _, c := range st.rec.GetToolCalls() {
		if c.GetIntent() != intentSurveyMetrics || c.GetError() != "" || c.GetPinId() == "" {
			continue
		}
		params := structMap(c.GetParams())
		if params["since"] != nil || params["start"] != nil || params["end"] != nil {
			continue
		}
		p := st.pin(c.GetPinId())
		if p.GetNoData() {
			continue
		}
		var ss []facts.Series
		if ok, err := facts.Decode(p.GetMetadata(), facts.KeySeries, &ss); !ok || err != nil || len(ss) == 0 || !allFlat(ss) {
			continue
		}
		long := map[string]any{"since": surveyLookback}
		for k, v := range params {
			long[k] = v
		}
		if out := s.fresh(ctx, st, intentSurveyMetrics, long); len(out) > 0 {
			return out
		}
	}
	return nil
}

// allFlat: no series changed shape over its window.
func allFlat(ss []facts.Series) bool {
	for _, s := range ss {
		if s.Shape != "" && s.Shape != series.ShapeFlat {
			return false
		}
	}
	return true
}

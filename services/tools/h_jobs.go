package tools

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/backend"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// maxJobs caps the Jobs list_jobs reports (newest first).
const maxJobs = 40

// handleListJobs lists Jobs (with their start, completion and outcome) and
// CronJobs (schedule, last run) in a namespace or across the cluster:
// batch work that ran around an incident.
func handleListJobs(ctx context.Context, s *Service, c *Call, r *Result) error {
	ns := allNamespaces(c.Params.String("namespace"))
	name := c.Params.String("name")
	r.EvidenceType, r.Domain = evidencev1.EvidenceType_EVIDENCE_TYPE_K8S_RESOURCE, evidencev1.Domain_DOMAIN_COMPUTE
	r.Namespace = ns
	jobs, err := s.be.Kube.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list jobs in %q: %w", nsLabel(ns), err)
	}
	crons, err := s.be.Kube.BatchV1().CronJobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		s.log.Debug("cronjobs unavailable", "err", err)
		crons = &batchv1.CronJobList{}
	}
	var out []facts.Resource
	items := jobs.Items
	sort.SliceStable(items, func(i, j int) bool { return jobStart(&items[i]).After(jobStart(&items[j])) })
	for i := range items {
		j := &items[i]
		if name != "" && !nameMatches(name, j.Name) && !ownerNamed(j.OwnerReferences, name) {
			continue
		}
		if len(out) >= maxJobs {
			break
		}
		out = append(out, jobFact(j))
	}
	for i := range crons.Items {
		cj := &crons.Items[i]
		if name != "" && !nameMatches(name, cj.Name) {
			continue
		}
		out = append(out, cronJobFact(cj))
	}
	if out == nil {
		out = []facts.Resource{}
	}
	r.Put(facts.KeyResources, out)
	if len(out) == 0 {
		r.NoData = true
		r.Summary = fmt.Sprintf("No Jobs or CronJobs in %s.", nsScope(ns))
		return nil
	}
	r.Source(s.be.Source(backend.AreaResources))
	r.Severity = evidencev1.Severity_SEVERITY_INFO
	failed := 0
	for _, res := range out {
		r.Rawf("%s %s: %s", res.Kind, qualified(res.Namespace, res.Name), strings.Join(res.Signals, "; "))
		for _, cd := range res.Conditions {
			if cd.Type == string(batchv1.JobFailed) && cd.Status == string(corev1.ConditionTrue) {
				failed++
				r.Snippet(fmt.Sprintf("Job %s/%s failed: %s %s", res.Namespace, res.Name, cd.Reason, cd.Message))
				r.Escalate(evidencev1.Severity_SEVERITY_MEDIUM)
			}
		}
	}
	r.Summary = fmt.Sprintf("%s in %s", plural(len(out), "Job/CronJob", "Jobs/CronJobs"), nsScope(ns))
	if failed > 0 {
		r.Summary += fmt.Sprintf(", %d failed", failed)
	}
	r.Summary += "."
	return nil
}

func ownerNamed(refs []metav1.OwnerReference, name string) bool {
	for _, o := range refs {
		if nameMatches(name, o.Name) {
			return true
		}
	}
	return false
}

func jobStart(j *batchv1.Job) time.Time {
	if j.Status.StartTime != nil {
		return j.Status.StartTime.Time
	}
	return j.CreationTimestamp.Time
}

// jobFact summarises a Job: start, completion, outcome, owner.
func jobFact(j *batchv1.Job) facts.Resource {
	res := facts.Resource{Kind: "Job", Namespace: j.Namespace, Name: j.Name, Owners: ownerStrings(j.OwnerReferences)}
	if st := jobStart(j); !st.IsZero() {
		t := st.UTC()
		res.CreatedAt = &t
		res.Signals = append(res.Signals, "started "+t.Format(time.RFC3339))
	}
	if j.Status.CompletionTime != nil {
		t := j.Status.CompletionTime.UTC()
		res.CompletedAt = &t
		res.Signals = append(res.Signals, "completed "+j.Status.CompletionTime.UTC().Format(time.RFC3339))
	}
	res.Signals = append(res.Signals, fmt.Sprintf("succeeded=%d failed=%d active=%d", j.Status.Succeeded, j.Status.Failed, j.Status.Active))
	if len(res.Owners) > 0 {
		res.Signals = append(res.Signals, "created by "+strings.Join(res.Owners, ", "))
	}
	for _, cd := range j.Status.Conditions {
		res.Conditions = append(res.Conditions, facts.Condition{Type: string(cd.Type), Status: string(cd.Status), Reason: cd.Reason, Message: cd.Message})
	}
	return res
}

// cronJobFact summarises a CronJob: schedule, concurrency policy, last runs.
func cronJobFact(cj *batchv1.CronJob) facts.Resource {
	res := facts.Resource{Kind: "CronJob", Namespace: cj.Namespace, Name: cj.Name}
	res.Signals = append(res.Signals, "schedule "+cj.Spec.Schedule)
	if cj.Spec.ConcurrencyPolicy != "" {
		res.Signals = append(res.Signals, "concurrencyPolicy "+string(cj.Spec.ConcurrencyPolicy))
	}
	if cj.Spec.Suspend != nil && *cj.Spec.Suspend {
		res.Signals = append(res.Signals, "suspended")
	}
	if cj.Status.LastScheduleTime != nil {
		res.Signals = append(res.Signals, "last scheduled "+cj.Status.LastScheduleTime.UTC().Format(time.RFC3339))
	}
	if cj.Status.LastSuccessfulTime != nil {
		res.Signals = append(res.Signals, "last successful "+cj.Status.LastSuccessfulTime.UTC().Format(time.RFC3339))
	}
	res.Signals = append(res.Signals, fmt.Sprintf("%d active", len(cj.Status.Active)))
	return res
}

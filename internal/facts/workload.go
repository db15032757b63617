package facts

import "regexp"

// The names Kubernetes controllers give pods: a Deployment's are
// <deployment>-<replica set hash>-<suffix>, a StatefulSet's
// <statefulset>-<ordinal>.
// A ReplicaSet's is <deployment>-<replica set hash>.
const replicaSetHash = `-[a-z0-9]{6,10}`

var (
	podOfDeployment  = regexp.MustCompile(`^([a-z0-9][a-z0-9.-]*?)` + replicaSetHash + `-[a-z0-9]{5}$`)
	podOfStatefulSet = regexp.MustCompile(`^([a-z0-9][a-z0-9.-]*?)-[0-9]+$`)
	replicaSetName   = regexp.MustCompile(replicaSetHash + `$`)
)

// PodWorkload names the workload a pod belongs to from the pod's name alone
// (a Deployment's or a StatefulSet's naming); ok is false for a name of
// neither form. Pod facts that name the owner are better evidence; this is
// for a bare name (an alert label, a log line).
func PodWorkload(pod string) (workload string, ok bool) {
	if m := podOfDeployment.FindStringSubmatch(pod); m != nil {
		return m[1], true
	}
	if m := podOfStatefulSet.FindStringSubmatch(pod); m != nil {
		return m[1], true
	}
	return "", false
}

// TrimReplicaSuffix drops a Deployment pod's replica set hash and suffix
// from a name and returns any other name unchanged.
func TrimReplicaSuffix(name string) string {
	if m := podOfDeployment.FindStringSubmatch(name); m != nil {
		return m[1]
	}
	return name
}

// IsDeploymentPod says whether a name has a Deployment pod's form.
func IsDeploymentPod(name string) bool { return podOfDeployment.MatchString(name) }

// ReplicaSetDeployment names the Deployment a ReplicaSet belongs to: its
// name without the trailing replica set hash (a name without one is
// returned unchanged).
func ReplicaSetDeployment(rs string) string { return replicaSetName.ReplaceAllString(rs, "") }

{{/* The services of the mesh and the gateway, in start order. */}}
{{- define "rcamesh.components" -}}
tools critic router delivery brain gateway
{{- end -}}

{{/* The services another component may call (every one but the gateway). */}}
{{- define "rcamesh.services" -}}
tools critic router delivery brain
{{- end -}}

{{- define "rcamesh.fullname" -}}
{{- if contains "rcamesh" .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-rcamesh" .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "rcamesh.labels" -}}
app.kubernetes.io/name: rcamesh
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Selector labels of one component: (dict "ctx" $ "component" "brain"). */}}
{{- define "rcamesh.selectorLabels" -}}
app.kubernetes.io/name: rcamesh
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Labels every pod of the release carries: what the network policies admit. */}}
{{- define "rcamesh.meshLabels" -}}
app.kubernetes.io/name: rcamesh
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "rcamesh.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "rcamesh.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "rcamesh.natsURL" -}}
{{- if .Values.nats.url -}}
{{- .Values.nats.url -}}
{{- else if .Values.nats.enabled -}}
{{- printf "nats://%s-nats:4222" .Release.Name -}}
{{- else -}}
{{- fail "nats.url is required: the URL of an existing NATS cluster with JetStream, or set nats.enabled=true" -}}
{{- end -}}
{{- end -}}

{{- define "rcamesh.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* gRPC address of a service: every replica behind its headless Service, round-robin. */}}
{{- define "rcamesh.serviceAddr" -}}
{{- printf "dns:///%s-%s.%s.svc:9090" (include "rcamesh.fullname" .ctx) .service .ctx.Release.Namespace -}}
{{- end -}}

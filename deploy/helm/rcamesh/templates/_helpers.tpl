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

{{/* Name of the Secret holding one component's mesh credentials: (dict "ctx" $ "component" "brain"). */}}
{{- define "rcamesh.credentialsSecret" -}}
{{- $v := .ctx.Values.mesh -}}
{{- $prefix := default (printf "%s-mesh" (include "rcamesh.fullname" .ctx)) $v.credentialsSecretPrefix -}}
{{- default (printf "%s-%s" $prefix .component) (get ($v.credentialsSecrets | default dict) .component) -}}
{{- end -}}

{{- define "rcamesh.tokensSecret" -}}
{{- default (printf "%s-api-tokens" (include "rcamesh.fullname" .)) .Values.auth.tokensSecret.name -}}
{{- end -}}

{{/* oidc is on when a JWKS is given (URL or ConfigMap). */}}
{{- define "rcamesh.oidc" -}}
{{- with .Values.auth.oidc -}}
{{- if or .jwksURL .jwksConfigMap.name -}}
{{- if not (and .issuer .audience) -}}
{{- fail "auth.oidc needs issuer and audience with a JWKS" -}}
{{- end -}}
true
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The security flags of every process: its own mesh credentials, API tokens
and/or OIDC (the pods listen beyond loopback, so one of them is required),
webhook secrets, CORS, TLS. Paths match rcamesh.securityMounts.
*/}}
{{- define "rcamesh.securityArgs" -}}
{{- $a := .Values.auth -}}
{{- if not (or $a.tokensSecret.enabled (include "rcamesh.oidc" .)) -}}
{{- fail "authentication is required: the pods listen on 0.0.0.0; keep auth.tokensSecret.enabled or configure auth.oidc" -}}
{{- end -}}
- -mesh.credentials-file=/var/run/secrets/rcamesh/mesh/mesh.cred
{{- if $a.tokensSecret.enabled }}
- -auth.tokens-file=/var/run/secrets/rcamesh/tokens/{{ $a.tokensSecret.key }}
{{- end }}
{{- if include "rcamesh.oidc" . }}
- -auth.jwt.issuer={{ $a.oidc.issuer }}
- -auth.jwt.audience={{ $a.oidc.audience }}
- -auth.jwt.roles-claim={{ $a.oidc.rolesClaim }}
{{- if $a.oidc.jwksURL }}
- -auth.jwt.jwks-url={{ $a.oidc.jwksURL }}
{{- else }}
- -auth.jwt.jwks-file=/etc/rcamesh/jwks/{{ $a.oidc.jwksConfigMap.key }}
{{- end }}
{{- end }}
{{- if $a.webhooksSecret.name }}
- -auth.webhooks-file=/var/run/secrets/rcamesh/webhooks/{{ $a.webhooksSecret.key }}
{{- end }}
{{- with $a.corsOrigins }}
- -http.cors-origins={{ join "," . }}
{{- end }}
{{- if .Values.tls.enabled }}
{{- if not .Values.tls.secretName }}
{{- fail "tls.enabled needs tls.secretName (a kubernetes.io/tls Secret with ca.crt)" }}
{{- end }}
- -tls.cert-file=/var/run/secrets/rcamesh/tls/tls.crt
- -tls.key-file=/var/run/secrets/rcamesh/tls/tls.key
- -tls.client-ca-file=/var/run/secrets/rcamesh/tls/ca.crt
{{- if .Values.tls.requireClientCert }}
- -tls.require-client-cert
{{- end }}
{{- end }}
{{- end -}}

{{/* The volume mounts of rcamesh.securityArgs. */}}
{{- define "rcamesh.securityMounts" -}}
- {name: mesh-credentials, mountPath: /var/run/secrets/rcamesh/mesh, readOnly: true}
{{- if .Values.auth.tokensSecret.enabled }}
- {name: api-tokens, mountPath: /var/run/secrets/rcamesh/tokens, readOnly: true}
{{- end }}
{{- if and (include "rcamesh.oidc" .) (not .Values.auth.oidc.jwksURL) }}
- {name: jwks, mountPath: /etc/rcamesh/jwks, readOnly: true}
{{- end }}
{{- if .Values.auth.webhooksSecret.name }}
- {name: webhooks, mountPath: /var/run/secrets/rcamesh/webhooks, readOnly: true}
{{- end }}
{{- if .Values.tls.enabled }}
- {name: tls, mountPath: /var/run/secrets/rcamesh/tls, readOnly: true}
{{- end }}
{{- end -}}

{{/* The volumes of rcamesh.securityMounts: (dict "ctx" $ "component" "brain"). Files readable by the pod's group (fsGroup) only. */}}
{{- define "rcamesh.securityVolumes" -}}
{{- $ := .ctx -}}
{{- $a := $.Values.auth -}}
- name: mesh-credentials
  secret:
    secretName: {{ include "rcamesh.credentialsSecret" . }}
    defaultMode: 0440
    items:
      - {key: mesh.cred, path: mesh.cred}
{{- if $a.tokensSecret.enabled }}
- name: api-tokens
  secret:
    secretName: {{ include "rcamesh.tokensSecret" $ }}
    defaultMode: 0440
    items:
      - {key: {{ $a.tokensSecret.key }}, path: {{ $a.tokensSecret.key }}}
{{- end }}
{{- if and (include "rcamesh.oidc" $) (not $a.oidc.jwksURL) }}
- name: jwks
  configMap:
    name: {{ $a.oidc.jwksConfigMap.name }}
    items:
      - {key: {{ $a.oidc.jwksConfigMap.key }}, path: {{ $a.oidc.jwksConfigMap.key }}}
{{- end }}
{{- if $a.webhooksSecret.name }}
- name: webhooks
  secret:
    secretName: {{ $a.webhooksSecret.name }}
    defaultMode: 0440
    items:
      - {key: {{ $a.webhooksSecret.key }}, path: {{ $a.webhooksSecret.key }}}
{{- end }}
{{- if $.Values.tls.enabled }}
- name: tls
  secret:
    secretName: {{ $.Values.tls.secretName }}
    defaultMode: 0440
{{- end }}
{{- end -}}

{{/*
The probes. Plain HTTP and gRPC health without TLS; with TLS the kubelet
probes over HTTPS (it does not verify the certificate; a gRPC probe cannot
speak TLS, so liveness is /healthz); with mTLS required the kubelet, which
has no client certificate, can only check that the ports accept TCP.
*/}}
{{- define "rcamesh.probes" -}}
{{- if and .Values.tls.enabled .Values.tls.requireClientCert }}
startupProbe:
  tcpSocket: {port: http}
  periodSeconds: 2
  failureThreshold: 30
livenessProbe:
  tcpSocket: {port: grpc}
  periodSeconds: 10
  timeoutSeconds: 3
  failureThreshold: 3
readinessProbe:
  tcpSocket: {port: http}
  periodSeconds: 5
  timeoutSeconds: 3
  failureThreshold: 2
{{- else }}
{{- $scheme := ternary "HTTPS" "HTTP" (.Values.tls.enabled | default false) }}
startupProbe:
  httpGet: {path: /healthz, port: http, scheme: {{ $scheme }}}
  periodSeconds: 2
  failureThreshold: 30
# gRPC health: NOT_SERVING once a service's loop failed; a restart heals it.
livenessProbe:
  {{- if .Values.tls.enabled }}
  httpGet: {path: /healthz, port: http, scheme: HTTPS}
  {{- else }}
  grpc: {port: 9090}
  {{- end }}
  periodSeconds: 10
  timeoutSeconds: 3
  failureThreshold: 3
# /readyz: every module started and the NATS connection up.
readinessProbe:
  httpGet: {path: /readyz, port: http, scheme: {{ $scheme }}}
  periodSeconds: 5
  timeoutSeconds: 3
  failureThreshold: 2
{{- end }}
{{- end -}}

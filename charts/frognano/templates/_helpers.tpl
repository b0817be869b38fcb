{{/* Chart name, overridable. */}}
{{- define "frognano.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Prefix of every object name. */}}
{{- define "frognano.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "frognano.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "frognano.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component: include "frognano.selectorLabels" (list . "web"). */}}
{{- define "frognano.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "frognano.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{/* Labels of one component's objects. */}}
{{- define "frognano.componentLabels" -}}
{{ include "frognano.labels" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{/* The FrogNano image reference. */}}
{{- define "frognano.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* An image reference from a values map with repository, tag and digest (digest wins). */}}
{{- define "frognano.imageRef" -}}
{{- if .digest -}}
{{- printf "%s@%s" .repository .digest -}}
{{- else -}}
{{- printf "%s:%s" .repository .tag -}}
{{- end -}}
{{- end -}}

{{/* The sglang-router image: sglang.router.image when its repository is set, else SGLang's. */}}
{{- define "frognano.routerImage" -}}
{{- if .Values.sglang.router.image.repository -}}
{{- include "frognano.imageRef" .Values.sglang.router.image -}}
{{- else -}}
{{- include "frognano.imageRef" .Values.sglang.image -}}
{{- end -}}
{{- end -}}

{{/* True (non-empty) when sglang-router runs in front of more than one SGLang pod. */}}
{{- define "frognano.sglangRouter" -}}
{{- if and .Values.sglang.enabled (gt (int .Values.sglang.replicas) 1) -}}true{{- end -}}
{{- end -}}

{{/* The Secret holding the App key and webhook secret. */}}
{{- define "frognano.githubSecretName" -}}
{{- default (printf "%s-github" (include "frognano.fullname" .)) .Values.github.existingSecret -}}
{{- end -}}

{{/* ServiceAccount of pods that need no Kubernetes API access (no token). */}}
{{- define "frognano.runtimeServiceAccount" -}}
{{- printf "%s-runtime" (include "frognano.fullname" .) -}}
{{- end -}}

{{/* ServiceAccount of the worker (drives sandbox pods). */}}
{{- define "frognano.workerServiceAccount" -}}
{{- printf "%s-worker" (include "frognano.fullname" .) -}}
{{- end -}}

{{/* ServiceAccount of sglang-router (lists and watches the SGLang pods). */}}
{{- define "frognano.routerServiceAccount" -}}
{{- printf "%s-sglang-router" (include "frognano.fullname" .) -}}
{{- end -}}

{{/* True (non-empty) when Redis runs in the cluster. */}}
{{- define "frognano.redisInternal" -}}
{{- if not (or .Values.redis.external.url .Values.redis.external.existingSecret) -}}true{{- end -}}
{{- end -}}

{{/* FROGNANO_REDIS_URL as an env entry. */}}
{{- define "frognano.redisEnv" -}}
- name: FROGNANO_REDIS_URL
{{- if .Values.redis.external.existingSecret }}
  valueFrom:
    secretKeyRef:
      name: {{ .Values.redis.external.existingSecret }}
      key: {{ .Values.redis.external.existingSecretKey }}
{{- else if .Values.redis.external.url }}
  value: {{ .Values.redis.external.url | quote }}
{{- else }}
  value: {{ printf "redis://%s-redis.%s.svc:6379/0" (include "frognano.fullname" .) .Release.Namespace | quote }}
{{- end }}
{{- end -}}

{{/* FROGNANO_MODEL_BASE_URL: the router when there is one, else the SGLang Service. */}}
{{- define "frognano.modelBaseUrl" -}}
{{- if include "frognano.sglangRouter" . -}}
{{- printf "http://%s-sglang-router.%s.svc:%d/v1" (include "frognano.fullname" .) .Release.Namespace (int .Values.sglang.router.port) -}}
{{- else if .Values.sglang.enabled -}}
{{- printf "http://%s-sglang.%s.svc:%d/v1" (include "frognano.fullname" .) .Release.Namespace (int .Values.sglang.port) -}}
{{- else -}}
{{- required "model.baseUrl is required when sglang.enabled is false" .Values.model.baseUrl -}}
{{- end -}}
{{- end -}}

{{/* Pod-level security context shared by every pod of the chart. */}}
{{- define "frognano.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ . }}
runAsGroup: {{ . }}
fsGroup: {{ . }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Container security context shared by every container of the chart. */}}
{{- define "frognano.containerSecurityContext" -}}
allowPrivilegeEscalation: false
privileged: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop:
    - ALL
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Mount path of the policy ConfigMap (FROGNANO_POLICY_DIR). */}}
{{- define "frognano.policyDir" -}}/etc/frognano/policies{{- end -}}

{{/* Name of the package index's Service (and StatefulSet). */}}
{{- define "frognano.packageIndexName" -}}
{{- printf "%s-package-index" (include "frognano.fullname" .) -}}
{{- end -}}

{{/* The in-cluster package index URL for the policy's environment.index_url. */}}
{{- define "frognano.packageIndexUrl" -}}
{{- printf "http://%s.%s.svc:%d/index/" (include "frognano.packageIndexName" .) .Release.Namespace (int .Values.packageIndex.port) -}}
{{- end -}}

{{/* True (non-empty) when environment pods may reach a package index: in-cluster or external.
Fails when both are on (values.schema.json rejects that too). */}}
{{- define "frognano.environmentEgress" -}}
{{- if and .Values.packageIndex.enabled .Values.packageIndex.external.cidrs -}}
{{- fail "packageIndex.enabled and packageIndex.external.cidrs exclude each other: set one" -}}
{{- end -}}
{{- if or .Values.packageIndex.enabled .Values.packageIndex.external.cidrs -}}true{{- end -}}
{{- end -}}

{{/* The label FrogNano sets on environment-build pods (and only on them). */}}
{{- define "frognano.environmentPodLabels" -}}
frognano.dev/purpose: environment
{{- end -}}

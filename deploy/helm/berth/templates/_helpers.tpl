{{/*
Name of every object of a release (ServiceAccount, ClusterRole(Binding), Role(Binding),
Deployment, Service, Lease): "berth-controller" for a release named "berth",
"<release>-controller" when the release name contains "berth", else "<release>-berth-controller".
*/}}
{{- define "berth.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- printf "%s-controller" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s-controller" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
Name of the release's ClusterRole and ClusterRoleBinding: "<fullname>.<namespace>", e.g.
"berth-controller.berth-system" (the MutatingWebhookConfiguration is "<fullname>-runs.<namespace>").
A namespace has no dot, so two releases differ in this name whenever they differ in namespace or
in fullname: releases of one name in two namespaces do not collide.
*/}}
{{- define "berth.clusterName" -}}
{{- printf "%s.%s" (include "berth.fullname" .) .Release.Namespace -}}
{{- end -}}

{{- define "berth.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels that select the controller's pods; never change them in an upgrade. */}}
{{- define "berth.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end -}}

{{- define "berth.labels" -}}
helm.sh/chart: {{ include "berth.chart" . }}
{{ include "berth.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "berth.image" -}}
{{- $repo := required "image.repository is required" .Values.image.repository -}}
{{- printf "%s:%s" $repo (.Values.image.tag | default .Chart.AppVersion | toString) -}}
{{- end -}}

{{/* Fails rendering on values the controller would reject at start-up. */}}
{{- define "berth.validate" -}}
{{- if not (has (toString .Values.logFormat) (list "json" "text")) -}}
{{- fail (printf "logFormat must be json or text, not %q" (toString .Values.logFormat)) -}}
{{- end -}}
{{- if not (has (toString .Values.logLevel) (list "debug" "info" "warn" "error")) -}}
{{- fail (printf "logLevel must be debug, info, warn or error, not %q" (toString .Values.logLevel)) -}}
{{- end -}}
{{- range $name, $addr := .Values.bindAddress -}}
{{- if not (regexMatch "^(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9.-]*):[0-9]{1,5}$" (toString $addr)) -}}
{{- fail (printf "bindAddress.%s must be HOST:PORT or :PORT, not %q" $name (toString $addr)) -}}
{{- end -}}
{{- end -}}
{{- range $name := list "probes" "webhook" -}}
{{- if regexMatch "^(127\\.[0-9.]+|localhost|\\[::1\\]):" (toString (index $.Values.bindAddress $name)) -}}
{{- fail (printf "bindAddress.%s must be reachable on the Pod IP, not %q" $name (toString (index $.Values.bindAddress $name))) -}}
{{- end -}}
{{- end -}}
{{- if lt (int .Values.replicas) 1 -}}
{{- fail "replicas must be at least 1" -}}
{{- end -}}
{{- if and (eq (toString .Values.admissionPolicies) "true") (not (include "berth.servesPolicies" .)) -}}
{{- fail "admissionPolicies: true needs admissionregistration.k8s.io/v1 MutatingAdmissionPolicy (Kubernetes 1.36 or later); this cluster does not serve it: use \"auto\" or false (the webhook)" -}}
{{- end -}}
{{- end -}}

{{/* Non-empty when the cluster serves admission policies of both kinds as v1 (Kubernetes 1.36+). */}}
{{- define "berth.servesPolicies" -}}
{{- if and (.Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy") (.Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy") -}}
true
{{- end -}}
{{- end -}}

{{/*
Non-empty when Runs are admitted by admission policies inside the API server (values
admissionPolicies: true, or "auto" on a cluster that serves them); the webhook is then off.
*/}}
{{- define "berth.admissionPolicies" -}}
{{- $p := toString .Values.admissionPolicies -}}
{{- if or (eq $p "true") (and (eq $p "auto") (include "berth.servesPolicies" .)) -}}
true
{{- end -}}
{{- end -}}

{{/* Non-empty when the controller serves the admission webhook (webhook.enabled, no policies). */}}
{{- define "berth.webhook" -}}
{{- if and .Values.webhook.enabled (not (include "berth.admissionPolicies" .)) -}}
true
{{- end -}}
{{- end -}}

{{/* The port of a bind address ("HOST:PORT" or ":PORT"). */}}
{{- define "berth.port" -}}
{{- regexFind "[0-9]+$" (toString .) -}}
{{- end -}}

{{/*
The webhook's CA and serving certificate made by the chart (not cert-manager), as JSON
{"ca", "crt", "key"} (base64 PEM). Computed once per render and kept in .Values for the other
templates (webhook.yaml writes the Secret, deployment.yaml a checksum of it into the Pods, so a
changed pair rolls them): genCA is random, so two computations would disagree.
The pair is generated once, at install, and kept: on an upgrade the Secret the release already
has (lookup) is written back unchanged. A Secret of chart 0.1.0 has no ca.crt: its CA is the
caBundle of the release's webhook configuration (named "<fullname>-runs" then). A Secret without
a usable pair is replaced by a new one. Delete the Secret to rotate.
*/}}
{{- define "berth.webhookCertificate" -}}
{{- if not (hasKey .Values "__berthWebhookCertificate") -}}
{{- $fullName := include "berth.fullname" . -}}
{{- $secretName := printf "%s-webhook-cert" $fullName -}}
{{- $host := printf "%s.%s.svc" $fullName .Release.Namespace -}}
{{- $dnsNames := list $host (printf "%s.%s" $fullName .Release.Namespace) $fullName -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace $secretName -}}
{{- $data := dict -}}
{{- if $existing }}{{ $data = $existing.data | default dict }}{{ end -}}
{{- $crt := index $data "tls.crt" | default "" -}}
{{- $key := index $data "tls.key" | default "" -}}
{{- $caCrt := index $data "ca.crt" | default "" -}}
{{- if and $crt $key (not $caCrt) -}}
{{- range $name := list (printf "%s-runs.%s" $fullName $.Release.Namespace) (printf "%s-runs" $fullName) -}}
{{- $old := lookup "admissionregistration.k8s.io/v1" "MutatingWebhookConfiguration" "" $name -}}
{{- if and (not $caCrt) $old $old.webhooks -}}
{{- $oldService := (index $old.webhooks 0).clientConfig.service | default dict -}}
{{- if eq ($oldService.namespace | default "") $.Release.Namespace -}}
{{- $caCrt = (index $old.webhooks 0).clientConfig.caBundle | default "" -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if not (and $crt $key $caCrt) -}}
{{- $ca := genCA (printf "%s-webhook-ca" $fullName) 3650 -}}
{{- $cert := genSignedCert $host nil $dnsNames 3650 $ca -}}
{{- $crt = $cert.Cert | b64enc -}}
{{- $key = $cert.Key | b64enc -}}
{{- $caCrt = $ca.Cert | b64enc -}}
{{- end -}}
{{- $_ := set .Values "__berthWebhookCertificate" (dict "ca" $caCrt "crt" $crt "key" $key) -}}
{{- end -}}
{{- index .Values "__berthWebhookCertificate" | toJson -}}
{{- end -}}

{{/*
Issue 47: the mutation (of a MutatingAdmissionPolicy) recording who creates an object in its
annotation berth.dev/submitted-by, unless it names one already (the ValidatingAdmissionPolicy
<fullname>-submitted-by decides whether that one may stand). The argument is a CEL condition under
which nothing is recorded ("false": always recorded).
*/}}
{{- define "berth.submittedByMutation" -}}
- patchType: JSONPatch
  jsonPatch:
    expression: >-
      {{ . }} || request.userInfo.username == "" ||
      (has(object.metadata.annotations) && "berth.dev/submitted-by" in object.metadata.annotations) ? [] :
      has(object.metadata.annotations)
      ? [JSONPatch{op: "add", path: "/metadata/annotations/berth.dev~1submitted-by", value: request.userInfo.username}]
      : [JSONPatch{op: "add", path: "/metadata/annotations", value: {"berth.dev/submitted-by": request.userInfo.username}}]
{{- end -}}

{{/*
Issue 48: a queued workload's topology (label or annotation berth.dev/topology-required /
berth.dev/topology-preferred; the annotation wins, as a label value cannot hold the "/" of a
prefixed key) must name a label key, and the two are exclusive: the engine's own check
(src/workloads/workload.cc, ReadTopology) says the same on the ticket when no policy runs. The
variables go after the policy's labels and annotations; the validations need queued too. An empty
value is no topology.
*/}}
{{- define "berth.topologyVariables" -}}
{{- range $name, $k := dict "topologyRequired" "berth.dev/topology-required" "topologyPreferred" "berth.dev/topology-preferred" }}
- name: {{ $name }}
  expression: >-
    {{ $k | quote }} in variables.annotations ? variables.annotations[{{ $k | quote }}] :
    ({{ $k | quote }} in variables.labels ? variables.labels[{{ $k | quote }}] : "")
{{- end }}
{{- end -}}

{{- define "berth.topologyValidations" -}}
{{- $re := `^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$` }}
{{- range $name, $k := dict "topologyRequired" "berth.dev/topology-required" "topologyPreferred" "berth.dev/topology-preferred" }}
- expression: >-
    !variables.queued || variables.{{ $name }} == "" || variables.{{ $name }}.matches({{ $re | quote }})
  reason: Invalid
  messageExpression: >-
    "label or annotation {{ $k }} must name a topology level's label key (such as example.com/rack), not \"" +
    (variables.{{ $name }}.size() > 100 ? variables.{{ $name }}.substring(0, 100) + "..." : variables.{{ $name }}) + "\""
{{- end }}
- expression: >-
    !variables.queued || variables.topologyRequired == "" || variables.topologyPreferred == ""
  reason: Invalid
  message: >-
    berth.dev/topology-required and berth.dev/topology-preferred are exclusive: a gang either must
    stay in one domain of a level (required) or prefers the smallest level that holds it (preferred)
{{- end -}}

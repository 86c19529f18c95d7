{{/*
Base name of every object: the release name when it contains "gpuheal",
else "<release>-gpuheal"; fullnameOverride wins.
*/}}
{{- define "gpuheal.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "gpuheal.agent.name" -}}{{ include "gpuheal.fullname" . }}-agent{{- end -}}
{{- define "gpuheal.controller.name" -}}{{ include "gpuheal.fullname" . }}-controller{{- end -}}

{{/*
Labels of every object; "gpuheal.labels" takes (list $ "component-name").
*/}}
{{- define "gpuheal.labels" -}}
{{- $ := index . 0 -}}
app.kubernetes.io/name: {{ index . 1 }}
app.kubernetes.io/part-of: gpuheal
app.kubernetes.io/version: {{ $.Chart.AppVersion | quote }}
{{- if $.Values.helmLabels }}
app.kubernetes.io/instance: {{ $.Release.Name }}
app.kubernetes.io/managed-by: {{ $.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" $.Chart.Name $.Chart.Version | replace "+" "_" }}
{{- end }}
{{- with $.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels: stable across upgrades. (list $ "component-name") */}}
{{- define "gpuheal.selectorLabels" -}}
{{- $ := index . 0 -}}
app.kubernetes.io/name: {{ index . 1 }}
{{- if $.Values.helmLabels }}
app.kubernetes.io/instance: {{ $.Release.Name }}
{{- end }}
{{- end -}}

{{/* image reference: (list $ .Values.agent.image) */}}
{{- define "gpuheal.image" -}}
{{- $ := index . 0 -}}
{{- $img := index . 1 -}}
{{- if $img.digest -}}
{{- if not (regexMatch "^sha256:[0-9a-f]{64}$" $img.digest) -}}
{{- fail (printf "image digest %q of %s: want sha256: and 64 hex digits" $img.digest $img.repository) -}}
{{- end -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository (default (default $.Chart.AppVersion $.Values.image.tag) $img.tag) -}}
{{- end -}}
{{- end -}}

{{/* "true" when the agent's pod asks for agent.runtimeClassName
(agent.runtimeClass: auto looks the RuntimeClass up; with no cluster to
ask, a lookup of kube-system finds nothing, and auto renders it). */}}
{{- define "gpuheal.useRuntimeClass" -}}
{{- $a := .Values.agent -}}
{{- /* Driver-root mode reads the driver from the host: the toolkit's
RuntimeClass, which fails the start when it cannot inject a broken driver,
is left out. */ -}}
{{- if and $a.runtimeClassName (ne $a.runtimeClass "never") (not $a.driverRoot) -}}
{{- if eq $a.runtimeClass "always" -}}true
{{- else if not (lookup "v1" "Namespace" "" "kube-system") -}}true
{{- else if lookup "node.k8s.io/v1" "RuntimeClass" "" $a.runtimeClassName -}}true
{{- end -}}
{{- end -}}
{{- end -}}

{{/* "true" when the node (a Node object as lookup returns it) matches
gpuNodeSelector and any one of gpuNodeAffinity's terms, as the scheduler
reads them: (list $ node) */}}
{{- define "gpuheal.isGPUNode" -}}
{{- $ := index . 0 -}}
{{- $labels := default dict (index . 1).metadata.labels -}}
{{- $ok := true -}}
{{- range $k, $v := $.Values.gpuNodeSelector -}}
{{- if ne (toString (get $labels $k)) (toString $v) -}}{{- $ok = false -}}{{- end -}}
{{- end -}}
{{- if and $ok $.Values.gpuNodeAffinity -}}
{{- $any := false -}}
{{- range $term := $.Values.gpuNodeAffinity -}}
{{- $all := true -}}
{{- range $e := $term.matchExpressions -}}
{{- $has := hasKey $labels $e.key -}}
{{- $v := toString (get $labels $e.key) -}}
{{- $vals := list -}}
{{- range $e.values -}}{{- $vals = append $vals (toString .) -}}{{- end -}}
{{- if eq $e.operator "In" -}}{{- if not (and $has (has $v $vals)) -}}{{- $all = false -}}{{- end -}}
{{- else if eq $e.operator "NotIn" -}}{{- if and $has (has $v $vals) -}}{{- $all = false -}}{{- end -}}
{{- else if eq $e.operator "Exists" -}}{{- if not $has -}}{{- $all = false -}}{{- end -}}
{{- else if eq $e.operator "DoesNotExist" -}}{{- if $has -}}{{- $all = false -}}{{- end -}}
{{- else if eq $e.operator "Gt" -}}{{- if not (and $has (regexMatch "^-?[0-9]+$" $v) (gt (atoi $v) (atoi (first $vals)))) -}}{{- $all = false -}}{{- end -}}
{{- else if eq $e.operator "Lt" -}}{{- if not (and $has (regexMatch "^-?[0-9]+$" $v) (lt (atoi $v) (atoi (first $vals)))) -}}{{- $all = false -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- if and $all $term.matchExpressions -}}{{- $any = true -}}{{- end -}}
{{- end -}}
{{- $ok = $any -}}
{{- end -}}
{{- if $ok -}}true{{- end -}}
{{- end -}}

{{/* An image reference a registry can resolve: a lower-case repository
and a tag, or a digest. (list $ .Values.agent.image) */}}
{{- define "gpuheal.imageWellFormed" -}}
{{- $ref := include "gpuheal.image" . -}}
{{- if regexMatch "^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}|@sha256:[0-9a-f]{64})$" $ref -}}true{{- end -}}
{{- end -}}

{{/* Whether a provider is enabled: (list $ "karpenter") */}}
{{- define "gpuheal.hasProvider" -}}
{{- if has (index . 1) (index . 0).Values.controller.providers -}}true{{- end -}}
{{- end -}}

{{- define "gpuheal.validate" -}}
{{- $access := .Values.agent.kernelLog.access -}}
{{- if not (has $access (list "syslog" "privileged" "devicePlugin" "file" "none")) -}}
{{- fail (printf "agent.kernelLog.access %q: want syslog, privileged, devicePlugin, file or none" $access) -}}
{{- end -}}
{{- $sink := .Values.controller.audit.sink -}}
{{- if not (has $sink (list "sqlite" "dynamodb" "jsonl" "none")) -}}
{{- fail (printf "controller.audit.sink %q: want sqlite, dynamodb, jsonl or none" $sink) -}}
{{- end -}}
{{- if and (eq $sink "sqlite") .Values.controller.audit.sqlite.persistence.enabled (gt (int .Values.controller.replicas) 1) -}}
{{- fail "controller.audit.sqlite.persistence.enabled needs controller.replicas=1: one SQLite writer on one ReadWriteOnce volume (use controller.audit.sink=dynamodb for more replicas)" -}}
{{- end -}}
{{- if and (eq $sink "dynamodb") (not .Values.controller.audit.dynamodb.table) -}}
{{- fail "controller.audit.sink=dynamodb needs controller.audit.dynamodb.table" -}}
{{- end -}}
{{- range .Values.controller.providers -}}
{{- if not (has . (list "aws" "karpenter" "clusterapi" "kwok" "none")) -}}
{{- fail (printf "controller.providers: unknown provider %q (aws, karpenter, clusterapi, kwok, none)" .) -}}
{{- end -}}
{{- end -}}
{{- with .Values.agent.rules -}}
{{- $rules := fromYaml . -}}
{{- if hasKey $rules "Error" -}}
{{- fail (printf "agent.rules is not YAML: %s" (get $rules "Error")) -}}
{{- end -}}
{{- if not (hasKey $rules "rules") -}}
{{- fail "agent.rules needs a rules: list (\"rules: []\" turns every rule off); leave agent.rules empty for the built-in rules" -}}
{{- end -}}
{{- end -}}
{{- if lt (int .Values.controller.replicas) 1 -}}
{{- fail "controller.replicas must be at least 1" -}}
{{- end -}}
{{- /* With the EKS names EKS node auto repair or Karpenter's node repair
act on the agent's conditions; gpuheal's policy beside them would be a
second repairer of the same node (both act on Ready too). */ -}}
{{- if and .Values.agent.enabled (eq .Values.agent.conditionTypes "eks") .Values.remediationPolicy.create -}}
{{- fail "agent.conditionTypes=eks hands repair to EKS node auto repair or Karpenter's node repair; set remediationPolicy.create=false with it, or keep agent.conditionTypes=gpuheal for gpuheal to repair (two systems would repair one node; docs/install.md, \"Living beside other remediators\")" -}}
{{- end -}}
{{- end -}}

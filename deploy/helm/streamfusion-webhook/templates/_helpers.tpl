{{- define "streamfusion-webhook.fullname" -}}
{{- printf "%s" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "streamfusion-webhook.labels" -}}
app.kubernetes.io/name: streamfusion-webhook
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "streamfusion-webhook.selectorLabels" -}}
app.kubernetes.io/name: streamfusion-webhook
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "streamfusion-webhook.serviceAccountName" -}}
{{- default (include "streamfusion-webhook.fullname" .) .Values.webhookServiceAccount.name -}}
{{- end -}}

{{/*
The webhook's image: by digest when one is set (a packaged release sets the
digest of the image index it built), else by tag (default: appVersion).
*/}}
{{- define "streamfusion-webhook.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

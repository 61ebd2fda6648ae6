{{/* The chart's name, release-scoped full name and labels. */}}
{{- define "cosmosdb-external-scaler.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "cosmosdb-external-scaler.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "cosmosdb-external-scaler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "cosmosdb-external-scaler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "cosmosdb-external-scaler.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "cosmosdb-external-scaler.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: keda
{{- end }}

{{- define "cosmosdb-external-scaler.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "cosmosdb-external-scaler.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "cosmosdb-external-scaler.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The address a ScaledObject's scalerAddress names. */}}
{{- define "cosmosdb-external-scaler.address" -}}
{{- printf "%s.%s.svc.cluster.local:%v" (include "cosmosdb-external-scaler.fullname" .) .Release.Namespace .Values.service.port }}
{{- end }}

{{/* The Secret the gRPC endpoint's certificate is mounted from. */}}
{{- define "cosmosdb-external-scaler.tlsSecretName" -}}
{{- default (printf "%s-tls" (include "cosmosdb-external-scaler.fullname" .)) .Values.tls.existingSecret }}
{{- end }}

{{/* The Secret in KEDA's namespace with KEDA's client certificate ("" when
the user brings the server's certificate and names no client Secret). */}}
{{- define "cosmosdb-external-scaler.kedaClientSecretName" -}}
{{- if .Values.tls.existingSecret }}
{{- .Values.tls.kedaClient.existingSecret }}
{{- else }}
{{- printf "%s-keda-client" (include "cosmosdb-external-scaler.fullname" .) }}
{{- end }}
{{- end }}

{{- define "cosmosdb-external-scaler.clusterTriggerAuthenticationName" -}}
{{- default (printf "%s-tls" (include "cosmosdb-external-scaler.fullname" .)) .Values.tls.kedaClient.clusterTriggerAuthentication.name }}
{{- end }}

{{/* "true" when the chart renders the ClusterTriggerAuthentication. */}}
{{- define "cosmosdb-external-scaler.renderCTA" -}}
{{- if and .Values.tls.enabled .Values.tls.kedaClient.clusterTriggerAuthentication.create (include "cosmosdb-external-scaler.kedaClientSecretName" .) }}true{{ end }}
{{- end }}

{{/* "true" when the NetworkPolicy is rendered: networkPolicy.enabled true,
or auto while the gRPC endpoint is not mutual TLS. */}}
{{- define "cosmosdb-external-scaler.renderNetworkPolicy" -}}
{{- $np := toString .Values.networkPolicy.enabled }}
{{- if not (has $np (list "true" "false" "auto")) }}
{{- fail (printf "networkPolicy.enabled must be true, false or auto, not %q" $np) }}
{{- end }}
{{- if or (eq $np "true") (and (eq $np "auto") (not (and .Values.tls.enabled .Values.tls.mutual))) }}true{{ end }}
{{- end }}

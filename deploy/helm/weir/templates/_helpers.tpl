{{/* The chart's name, and the release's full name (63 characters at most). */}}
{{- define "weir.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "weir.fullname" -}}
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

{{- define "weir.selectorLabels" -}}
app.kubernetes.io/name: {{ include "weir.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "weir.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "weir.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "weir.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "weir.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "weir.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{- define "weir.configMapName" -}}
{{- default (include "weir.fullname" .) .Values.existingConfigMap }}
{{- end }}

{{/*
terminationGracePeriodSeconds: a graceful stop takes at most twice
checkpoint.shutdown_timeout (in-flight data, then closing), plus a margin
for the kubelet's own delays.
*/}}
{{- define "weir.terminationGracePeriodSeconds" -}}
{{- add (mul 2 (int .Values.shutdownTimeoutSeconds)) (int .Values.terminationGraceMarginSeconds) }}
{{- end }}

{{/* The checks no schema can make. */}}
{{- define "weir.validate" -}}
{{- if and (kindIs "map" .Values.config) (hasKey .Values.config "checkpoint") }}
{{- if hasKey .Values.config.checkpoint "shutdown_timeout" }}
{{- fail "config.checkpoint.shutdown_timeout: set shutdownTimeoutSeconds instead (the chart derives terminationGracePeriodSeconds from it)" }}
{{- end }}
{{- end }}
{{- if and (kindIs "map" .Values.config) (hasKey .Values.config "metrics") }}
{{- fail "config.metrics: set metrics.address in the chart's values instead (the probes, the Service and the ServiceMonitor use it)" }}
{{- end }}
{{- if and (not .Values.existingConfigMap) (empty .Values.config) }}
{{- fail "config: the pipeline is empty; set config (docs/config.md) or existingConfigMap" }}
{{- end }}
{{- if and (eq .Values.kind "Deployment") .Values.persistence.enabled (gt (int .Values.replicas) 1) (has "ReadWriteOnce" .Values.persistence.accessModes) }}
{{- fail "persistence: a Deployment of several replicas cannot share one ReadWriteOnce volume; use kind: StatefulSet (a volume per replica) or persistence.enabled: false" }}
{{- end }}
{{- end }}

{{/* The pod template, the same for a StatefulSet and a Deployment. */}}
{{- define "weir.podTemplate" -}}
metadata:
  labels:
    {{- include "weir.labels" . | nindent 4 }}
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    {{- if and (eq .Values.configReload "restart") (not .Values.existingConfigMap) }}
    checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}
    {{- end }}
    {{- with .Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "weir.serviceAccountName" . }}
  automountServiceAccountToken: {{ .Values.serviceAccount.automount }}
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  terminationGracePeriodSeconds: {{ include "weir.terminationGracePeriodSeconds" . }}
  {{- with .Values.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  securityContext:
    {{- toYaml .Values.podSecurityContext | nindent 4 }}
  containers:
    - name: weir
      image: {{ include "weir.image" . | quote }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      args:
        - run
        - -c
        - /etc/weir/weir.yaml
        - --metrics-addr
        - {{ .Values.metrics.address | quote }}
        - --log-format
        - {{ .Values.logFormat | quote }}
        - --log-level
        - {{ .Values.logLevel | quote }}
        - --set
        - {{ printf "checkpoint.shutdown_timeout=%ds" (int .Values.shutdownTimeoutSeconds) | quote }}
        {{- if eq .Values.configReload "watch" }}
        - --watch
        {{- end }}
        {{- range .Values.extraArgs }}
        - {{ . | quote }}
        {{- end }}
      env:
        - name: POD_NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        - name: POD_NAMESPACE
          valueFrom:
            fieldRef:
              fieldPath: metadata.namespace
        {{- with .Values.goMemLimit }}
        - name: GOMEMLIMIT
          value: {{ . | quote }}
        {{- end }}
        {{- range $name, $ref := .Values.secretEnv }}
        - name: {{ $name }}
          valueFrom:
            secretKeyRef:
              name: {{ $ref.secretName }}
              key: {{ $ref.key }}
        {{- end }}
        {{- with .Values.env }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with .Values.envFrom }}
      envFrom:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      ports:
        - name: metrics
          containerPort: {{ .Values.metrics.port }}
          protocol: TCP
      startupProbe:
        httpGet:
          path: /healthz
          port: metrics
        periodSeconds: {{ .Values.probes.startup.periodSeconds }}
        failureThreshold: {{ .Values.probes.startup.failureThreshold }}
      livenessProbe:
        httpGet:
          path: /healthz
          port: metrics
        periodSeconds: {{ .Values.probes.liveness.periodSeconds }}
        timeoutSeconds: {{ .Values.probes.liveness.timeoutSeconds }}
        failureThreshold: {{ .Values.probes.liveness.failureThreshold }}
      readinessProbe:
        httpGet:
          path: /readyz
          port: metrics
        periodSeconds: {{ .Values.probes.readiness.periodSeconds }}
        timeoutSeconds: {{ .Values.probes.readiness.timeoutSeconds }}
        failureThreshold: {{ .Values.probes.readiness.failureThreshold }}
      resources:
        {{- toYaml .Values.resources | nindent 8 }}
      securityContext:
        {{- toYaml .Values.securityContext | nindent 8 }}
      volumeMounts:
        - name: config
          mountPath: /etc/weir
          readOnly: true
        - name: state
          mountPath: /var/lib/weir
        - name: tmp
          mountPath: /tmp
        {{- with .Values.extraVolumeMounts }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
  volumes:
    - name: config
      configMap:
        name: {{ include "weir.configMapName" . }}
        items:
          - key: weir.yaml
            path: weir.yaml
    - name: tmp
      emptyDir: {}
    {{- if not .Values.persistence.enabled }}
    - name: state
      emptyDir: {}
    {{- else if eq .Values.kind "Deployment" }}
    - name: state
      persistentVolumeClaim:
        claimName: {{ include "weir.fullname" . }}-state
    {{- end }}
    {{- with .Values.extraVolumes }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

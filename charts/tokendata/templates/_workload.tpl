{{/*
The one shape every stateless component is rendered from (edge, supply,
market, holders and the cache tier): ServiceAccount, Deployment, Service,
PodDisruptionBudget and HorizontalPodAutoscaler, from the component's
values block. Call with a dict:

  root       the chart root context ($)
  component  the component name (edge, supply, ...)
  c          the component's values block
  ports      list of (dict "name" "http" "port" 8080)
  env        the container env, as YAML (may be empty)
  volumes    extra pod volumes, as YAML (may be empty)
  mounts     extra volume mounts, as YAML (may be empty)
  command    container command (list, may be empty: the image's)
  args       container args (list, may be empty)
  lifecycle  the container's lifecycle, as YAML (may be empty)
  checksums  pod annotations that roll the pods when a config changes
  metrics    whether the Service exposes an ops port for scraping
*/}}
{{- define "tokendata.workload" -}}
{{- $root := .root -}}
{{- $c := .c -}}
{{- $name := include "tokendata.componentName" (dict "root" $root "component" .component) -}}
{{- $sel := dict "root" $root "component" .component -}}
{{- $hpa := and $c.autoscaling $c.autoscaling.enabled -}}
{{- $replicas := int $c.replicaCount -}}
{{- if $hpa }}{{ $replicas = int $c.autoscaling.minReplicas }}{{ end -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ $name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "tokendata.componentLabels" $sel | nindent 4 }}
automountServiceAccountToken: false
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "tokendata.componentLabels" $sel | nindent 4 }}
spec:
  {{- if not $hpa }}
  replicas: {{ $c.replicaCount }}
  {{- end }}
  revisionHistoryLimit: 3
  selector:
    matchLabels:
      {{- include "tokendata.selectorLabels" $sel | nindent 6 }}
  {{- with $c.strategy }}
  strategy:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  template:
    metadata:
      labels:
        {{- include "tokendata.podLabels" (merge (dict "podLabels" $c.podLabels) $sel) | nindent 8 }}
      {{- $ann := merge (dict) (default (dict) .checksums) (default (dict) $c.podAnnotations) }}
      {{- with $ann }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      serviceAccountName: {{ $name }}
      automountServiceAccountToken: false
      enableServiceLinks: false
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $c.podSecurityContext }}
      securityContext:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      terminationGracePeriodSeconds: {{ $c.terminationGracePeriodSeconds }}
      {{- with $c.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      containers:
        - name: {{ .component }}
          image: {{ include "tokendata.image" (dict "root" $root "image" $c.image) | quote }}
          imagePullPolicy: {{ include "tokendata.pullPolicy" (dict "root" $root "image" $c.image) }}
          {{- with .command }}
          command:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          {{- with .args }}
          args:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          ports:
            {{- range .ports }}
            - name: {{ .name }}
              containerPort: {{ .port }}
              protocol: TCP
            {{- end }}
          {{- if or .env $c.extraEnv }}
          env:
            {{- with .env }}
            {{- . | trim | nindent 12 }}
            {{- end }}
            {{- with $c.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- end }}
          {{- include "tokendata.probes" (dict "root" $root "c" $c) | trim | nindent 10 }}
          {{- with .lifecycle }}
          lifecycle:
            {{- . | trim | nindent 12 }}
          {{- end }}
          resources:
            {{- toYaml $c.resources | nindent 12 }}
          {{- with $c.securityContext }}
          securityContext:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          {{- with .mounts }}
          volumeMounts:
            {{- . | trim | nindent 12 }}
          {{- end }}
      {{- with .volumes }}
      volumes:
        {{- . | trim | nindent 8 }}
      {{- end }}
      {{- with $c.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $c.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with include "tokendata.tolerations" (dict "root" $root "tolerations" $c.tolerations) }}
      tolerations:
        {{- . | nindent 8 }}
      {{- end }}
      {{- with $c.topologySpreadConstraints }}
      topologySpreadConstraints:
        {{- range . }}
        {{- $own := dict "labelSelector" (dict "matchLabels" (fromYaml (include "tokendata.selectorLabels" $sel))) }}
        - {{ toYaml (merge (deepCopy .) $own) | nindent 10 | trim }}
        {{- end }}
      {{- end }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "tokendata.componentLabels" $sel | nindent 4 }}
    {{- if .metrics }}
    tokendata.io/metrics: "true"
    {{- end }}
spec:
  type: ClusterIP
  selector:
    {{- include "tokendata.selectorLabels" $sel | nindent 4 }}
  ports:
    {{- range .ports }}
    - name: {{ .name }}
      port: {{ .port }}
      targetPort: {{ .name }}
      protocol: TCP
    {{- end }}
{{- if and $c.pdb.enabled (gt $replicas 1) }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ $name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "tokendata.componentLabels" $sel | nindent 4 }}
spec:
  {{- if not (kindIs "invalid" $c.pdb.maxUnavailable) }}
  maxUnavailable: {{ $c.pdb.maxUnavailable }}
  {{- else }}
  minAvailable: {{ $c.pdb.minAvailable }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "tokendata.selectorLabels" $sel | nindent 6 }}
{{- end }}
{{- if $hpa }}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ $name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "tokendata.componentLabels" $sel | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ $name }}
  minReplicas: {{ $c.autoscaling.minReplicas }}
  maxReplicas: {{ $c.autoscaling.maxReplicas }}
  metrics:
    {{- with $c.autoscaling.targetCPUUtilizationPercentage }}
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ . }}
    {{- end }}
    {{- with $c.autoscaling.targetMemoryUtilizationPercentage }}
    - type: Resource
      resource:
        name: memory
        target:
          type: Utilization
          averageUtilization: {{ . }}
    {{- end }}
  {{- with $c.autoscaling.behavior }}
  behavior:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end -}}

{{/*
A container's probes from its component's values (startupProbe,
livenessProbe, readinessProbe), each through tpl so that a value may name
another ({{ .Values.redis.port }}); an empty or null probe is left out:
(dict "root" $ "c" .Values.edge).
*/}}
{{- define "tokendata.probes" -}}
{{- range $p := list "startupProbe" "livenessProbe" "readinessProbe" }}
{{- with index $.c $p }}
{{ $p }}:
  {{- tpl (toYaml .) $.root | nindent 2 }}
{{- end }}
{{- end }}
{{- end -}}

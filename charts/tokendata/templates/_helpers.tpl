{{/*
Standard helpers: names, labels, images, security contexts, and the
environment every Go service shares (README, Configuration).
*/}}

{{/* The chart name, overridable. */}}
{{- define "tokendata.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release-qualified base name of every object. */}}
{{- define "tokendata.fullname" -}}
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

{{/* The name of a component's objects: (dict "root" $ "component" "edge"). */}}
{{- define "tokendata.componentName" -}}
{{- printf "%s-%s" (include "tokendata.fullname" .root | trunc 52 | trimSuffix "-") .component -}}
{{- end -}}

{{/* chart label value */}}
{{- define "tokendata.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels on every object of the release. */}}
{{- define "tokendata.labels" -}}
helm.sh/chart: {{ include "tokendata.chart" . }}
app.kubernetes.io/name: {{ include "tokendata.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: tokendata
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
Labels of one component's pod template: (dict "root" $ "component" "edge"
"podLabels" .Values.edge.podLabels). Only labels that change with what the
pods run: no helm.sh/chart nor app.kubernetes.io/version, which change with
every chart release and would restart every pod (Redis included, whose
emptyDir then loses its data) without anything in the pods having changed.
*/}}
{{- define "tokendata.podLabels" -}}
{{ include "tokendata.selectorLabels" . }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: tokendata
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- with .podLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
The labels the chart sets itself, which commonLabels and podLabels must not
set: the selector labels (a Deployment's selector is immutable, and a pod
label that differs from it leaves the pods unselected) and the other
labels the chart owns (a duplicate key is invalid YAML).
*/}}
{{- define "tokendata.reservedLabels" -}}
{{- list "app.kubernetes.io/name" "app.kubernetes.io/instance" "app.kubernetes.io/component" "app.kubernetes.io/managed-by" "app.kubernetes.io/part-of" "app.kubernetes.io/version" "helm.sh/chart" | toJson -}}
{{- end -}}

{{/*
Checks across values that the schema cannot express, before anything is
rendered: each fails the render with what to change.
*/}}
{{- define "tokendata.validate" -}}
{{- with .Values.upstreams.rpc -}}
{{- if and .holdersCrosscheckUrlKey (not .existingSecret) -}}
{{- fail "upstreams.rpc.holdersCrosscheckUrlKey is set without upstreams.rpc.existingSecret: the second holder source's URL carries a key, so it is read from that Secret only; name the Secret" -}}
{{- end -}}
{{- if and .holdersWsUrlKey (not .existingSecret) -}}
{{- fail "upstreams.rpc.holdersWsUrlKey is set without upstreams.rpc.existingSecret: the holders node's PubSub URL carries a key, so it is read from that Secret only; name the Secret" -}}
{{- end -}}
{{- end -}}
{{- with .Values.signing -}}
{{- if and .previousKey (not .existingSecret) -}}
{{- fail "signing.previousKey is set without signing.existingSecret: a rotation needs the new key; put both keys in one Secret and name it" -}}
{{- end -}}
{{- if and .previousKey (eq .previousKey .key) -}}
{{- fail (printf "signing.previousKey is signing.key (%s): the previous key is another key of the Secret" .key) -}}
{{- end -}}
{{- end -}}
{{- $reserved := include "tokendata.reservedLabels" . | fromJsonArray -}}
{{- range $k, $_ := .Values.commonLabels -}}
{{- if has $k $reserved -}}
{{- fail (printf "commonLabels.%s: the chart sets this label itself (selector and ownership labels cannot be overridden); use another key" $k) -}}
{{- end -}}
{{- end -}}
{{- range $component := list "edge" "supply" "market" "holders" "cache" "redis" -}}
{{- $c := index $.Values $component -}}
{{- range $k, $_ := $c.podLabels -}}
{{- if has $k $reserved -}}
{{- fail (printf "%s.podLabels.%s: the chart sets this label itself (selector and ownership labels cannot be overridden); use another key" $component $k) -}}
{{- end -}}
{{- end -}}
{{- with $c.autoscaling -}}
{{- if and .enabled (gt (int .minReplicas) (int .maxReplicas)) -}}
{{- fail (printf "%s.autoscaling: minReplicas (%d) is greater than maxReplicas (%d); the API server refuses such a HorizontalPodAutoscaler" $component (int .minReplicas) (int .maxReplicas)) -}}
{{- end -}}
{{- end -}}
{{- with $c.pdb -}}
{{- if and .enabled (not (kindIs "invalid" .maxUnavailable)) (or (eq (toString .maxUnavailable) "0") (eq (toString .maxUnavailable) "0%")) -}}
{{- fail (printf "%s.pdb.maxUnavailable: 0 would block every voluntary eviction (node drains never finish); set 1 or more, or set it to null and use minAvailable, or disable the PodDisruptionBudget" $component) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "edge"). */}}
{{- define "tokendata.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tokendata.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Every label of one component's objects. */}}
{{- define "tokendata.componentLabels" -}}
{{ include "tokendata.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Selector of every pod of the release (default-deny policy). */}}
{{- define "tokendata.releaseSelector" -}}
app.kubernetes.io/name: {{ include "tokendata.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
A component's image reference: (dict "root" $ "image" .Values.edge.image).
A digest wins over a tag; the tag defaults to image.tag, then appVersion.
*/}}
{{- define "tokendata.image" -}}
{{- $img := .image -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository (toString (default (default .root.Chart.AppVersion .root.Values.image.tag) $img.tag)) -}}
{{- end -}}
{{- end -}}

{{/* The pull policy of a component's image. */}}
{{- define "tokendata.pullPolicy" -}}
{{- default .root.Values.image.pullPolicy .image.pullPolicy -}}
{{- end -}}

{{/* The container security context every container gets (style.md: Helm). */}}
{{- define "tokendata.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* A pod security context for a user id: (dict "uid" 65532). */}}
{{- define "tokendata.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .uid }}
runAsGroup: {{ .uid }}
fsGroup: {{ .uid }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The name of the in-chart Redis objects. */}}
{{- define "tokendata.redisName" -}}
{{- include "tokendata.componentName" (dict "root" . "component" "redis") -}}
{{- end -}}

{{/* The Secret holding the in-chart Redis password. */}}
{{- define "tokendata.redisSecretName" -}}
{{- if .Values.redis.auth.existingSecret -}}
{{- .Values.redis.auth.existingSecret -}}
{{- else -}}
{{- include "tokendata.redisName" . -}}
{{- end -}}
{{- end -}}

{{/*
REDIS_URL and REDIS_PASSWORD for every Go service. In-chart Redis: the
password comes from its Secret as REDIS_PASSWORD, apart from the URL, so
that any character works unescaped (a password pasted into a URL breaks on
/ # ? % @ :) and it is never rendered. External Redis: the whole URL from
an existing Secret (optionally with the password apart from it, in
externalRedis.passwordKey), or a URL without credentials.
*/}}
{{- define "tokendata.redisEnv" -}}
{{- if .Values.redis.enabled }}
- name: REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "tokendata.redisSecretName" . }}
      key: {{ .Values.redis.auth.existingSecretKey }}
- name: REDIS_URL
  value: {{ printf "redis://%s:%d/0" (include "tokendata.redisName" .) (int .Values.redis.port) | quote }}
{{- else if .Values.externalRedis.existingSecret }}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.externalRedis.existingSecret }}
      key: {{ .Values.externalRedis.existingSecretKey }}
{{- with .Values.externalRedis.existingSecretPasswordKey }}
- name: REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $.Values.externalRedis.existingSecret }}
      key: {{ . }}
{{- end }}
{{- else if .Values.externalRedis.url }}
{{- if contains "@" .Values.externalRedis.url }}
{{- fail "externalRedis.url must not carry credentials: put the whole URL in a Secret and set externalRedis.existingSecret" }}
{{- end }}
- name: REDIS_URL
  value: {{ .Values.externalRedis.url | quote }}
{{- else }}
{{- fail "Redis: enable redis.enabled, or set externalRedis.existingSecret or externalRedis.url" }}
{{- end }}
{{- end -}}

{{/*
The in-chart Redis password, when the chart can know it: from
redis.auth.existingSecret (read from the cluster by `helm install/upgrade`;
unknown to `helm template`), or the chart's own Secret (kept across
upgrades; a new random one on the first install and on every `helm
template`). Empty when unknown.
*/}}
{{- define "tokendata.redisPassword" -}}
{{- $secret := lookup "v1" "Secret" .Release.Namespace (include "tokendata.redisSecretName" .) -}}
{{- if and $secret $secret.data (hasKey $secret.data .Values.redis.auth.existingSecretKey) -}}
{{- index $secret.data .Values.redis.auth.existingSecretKey | b64dec -}}
{{- else if not .Values.redis.auth.existingSecret -}}
{{- $cache := .Values.redis.auth -}}
{{- if not (hasKey $cache "__generated") -}}
{{- $_ := set $cache "__generated" (randAlphaNum 32) -}}
{{- end -}}
{{- $cache.__generated -}}
{{- end -}}
{{- end -}}

{{/*
Pod annotation that rolls the pods when the Redis password changes: a
digest of it (salted with the release, so the annotation tells nothing
about the password). Empty (no annotation) when the chart cannot know the
password (an existing Secret under `helm template`).
*/}}
{{- define "tokendata.redisAuthChecksum" -}}
{{- if .Values.redis.enabled -}}
{{- with include "tokendata.redisPassword" . -}}
{{- printf "%s/%s/%s" $.Release.Namespace $.Release.Name . | sha256sum -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The token file's ConfigMap name, or the user's. */}}
{{- define "tokendata.tokenConfigMap" -}}
{{- if .Values.token.existingConfigMap -}}
{{- .Values.token.existingConfigMap -}}
{{- else -}}
{{- include "tokendata.componentName" (dict "root" . "component" "token") -}}
{{- end -}}
{{- end -}}

{{/* Whether a token file is mounted. */}}
{{- define "tokendata.hasTokenFile" -}}
{{- if or .Values.token.existingConfigMap .Values.token.file -}}true{{- end -}}
{{- end -}}

{{/* The environment every Go service shares (README, Configuration). */}}
{{- define "tokendata.commonEnv" -}}
{{- if not (or (include "tokendata.hasTokenFile" .) .Values.token.mint) }}
{{- fail "token: set token.file, token.existingConfigMap or token.mint (demo mode is for standalone only)" }}
{{- end }}
{{- if and .Values.token.file (not .Values.token.existingConfigMap) (not (hasKey .Values.token.file "max_supply")) (not .Values.token.maxSupply) }}
{{- fail "token.file.max_supply: required: the maximum supply in whole tokens (\"1000000000\"), or none when the issuer discloses none; it is never guessed" }}
{{- end }}
{{- if and (not (include "tokendata.hasTokenFile" .)) (not .Values.token.maxSupply) }}
{{- fail "token.maxSupply: required with token.mint alone: the maximum supply in whole tokens (\"1000000000\"), or none when the issuer discloses none" }}
{{- end }}
{{- if include "tokendata.hasTokenFile" . }}
- name: TOKEN_CONFIG
  value: /etc/tokendata/token.yaml
{{- end }}
{{- with .Values.token.mint }}
- name: TOKEN_MINT
  value: {{ . | quote }}
{{- end }}
{{- with .Values.token.maxSupply }}
- name: TOKEN_MAX_SUPPLY
  value: {{ . | quote }}
{{- end }}
- name: OPS_ADDR
  value: {{ printf ":%d" (int .Values.ports.ops) | quote }}
- name: LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: DRAIN_DELAY
  value: {{ .Values.lifecycle.drainDelay | quote }}
- name: DRAIN_MAX
  value: {{ .Values.lifecycle.drainMax | quote }}
- name: SHUTDOWN_TIMEOUT
  value: {{ .Values.lifecycle.shutdownTimeout | quote }}
{{- range $domain := list "market" "supply" "metadata" "holders" }}
{{- $t := index $.Values.timings $domain }}
{{- range $field, $var := dict "refresh" "REFRESH" "staleAfter" "STALE_AFTER" "ttl" "TTL" }}
{{- with index $t $field }}
- name: {{ printf "%s_%s" (upper $domain) $var }}
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
The RPC URLs of a collector, from an existing Secret (they carry API keys):
(dict "root" $ "holders" true). Several ledger nodes: one key per node
(nodeUrlKeys, each into SOLANA_RPC_NODE_<n>, joined into SOLANA_RPC_URLS by
the kubelet's $(VAR) expansion, so no URL is ever a value), or one key
holding the list (solanaUrlsKey); the supply collector's PubSub URLs from
wsUrlsKey (SOLANA_WS_URLS), else derived from the RPC URLs; the holders
collector's HOLDERS_RPC_URL (holdersUrlKey, optional) and second holder
source HOLDERS_CROSSCHECK_RPC_URL (holdersCrosscheckUrlKey, when set) and
PubSub URL of its live count HOLDERS_WS_URL (holdersWsUrlKey, when set). Without a Secret the services use their
built-in public endpoint; with simulator.enabled, the simulator (and its
ledger node 1 as the holders' second source when simulator.nodes is set).
*/}}
{{- define "tokendata.rpcEnv" -}}
{{- $rpc := .root.Values.upstreams.rpc -}}
{{- if .root.Values.simulator.enabled }}
- name: SOLANA_RPC_URL
  value: {{ include "tokendata.simulatorURL" (dict "root" .root "port" .root.Values.simulator.rpcPort) | quote }}
{{- if and .holders (gt (int .root.Values.simulator.nodes) 0) }}
- name: HOLDERS_CROSSCHECK_RPC_URL
  value: {{ include "tokendata.simulatorURL" (dict "root" .root "port" .root.Values.simulator.nodePort) | quote }}
{{- end }}
{{- else if $rpc.existingSecret }}
{{- if $rpc.nodeUrlKeys }}
{{- $refs := list }}
{{- range $i, $key := $rpc.nodeUrlKeys }}
{{- $name := printf "SOLANA_RPC_NODE_%d" (add1 $i) }}
{{- $refs = append $refs (printf "$(%s)" $name) }}
- name: {{ $name }}
  valueFrom:
    secretKeyRef:
      name: {{ $rpc.existingSecret }}
      key: {{ $key }}
{{- end }}
- name: SOLANA_RPC_URLS
  value: {{ join "," $refs | quote }}
{{- else if $rpc.solanaUrlsKey }}
- name: SOLANA_RPC_URLS
  valueFrom:
    secretKeyRef:
      name: {{ $rpc.existingSecret }}
      key: {{ $rpc.solanaUrlsKey }}
{{- else }}
- name: SOLANA_RPC_URL
  valueFrom:
    secretKeyRef:
      name: {{ $rpc.existingSecret }}
      key: {{ $rpc.solanaUrlKey }}
{{- end }}
{{- if and (not .holders) $rpc.wsUrlsKey }}
- name: SOLANA_WS_URLS
  valueFrom:
    secretKeyRef:
      name: {{ $rpc.existingSecret }}
      key: {{ $rpc.wsUrlsKey }}
{{- end }}
{{- if and (not .holders) $rpc.quorum }}
- name: SUPPLY_QUORUM
  value: {{ $rpc.quorum | quote }}
{{- end }}
{{- if .holders }}
- name: HOLDERS_RPC_URL
  valueFrom:
    secretKeyRef:
      name: {{ $rpc.existingSecret }}
      key: {{ $rpc.holdersUrlKey }}
      optional: true
{{- with $rpc.holdersCrosscheckUrlKey }}
- name: HOLDERS_CROSSCHECK_RPC_URL
  valueFrom:
    secretKeyRef:
      name: {{ $rpc.existingSecret }}
      key: {{ . }}
{{- end }}
{{- with $rpc.holdersWsUrlKey }}
- name: HOLDERS_WS_URL
  valueFrom:
    secretKeyRef:
      name: {{ $rpc.existingSecret }}
      key: {{ . }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The market collector's aggregators: upstreams.*, or the simulator. */}}
{{- define "tokendata.marketEnv" -}}
{{- $ds := .Values.upstreams.dexscreenerUrl -}}
{{- $gt := .Values.upstreams.geckoterminalUrl -}}
{{- if .Values.simulator.enabled -}}
{{- $ds = include "tokendata.simulatorURL" (dict "root" . "port" .Values.simulator.dexPort) -}}
{{- $gt = printf "%s/api/v2" $ds -}}
{{- end }}
- name: DEXSCREENER_URL
  value: {{ $ds | quote }}
- name: GECKOTERMINAL_URL
  value: {{ $gt | quote }}
{{- end -}}

{{/* The URL of a port of the simulator's Service: (dict "root" $ "port" 8899). */}}
{{- define "tokendata.simulatorURL" -}}
{{- printf "http://%s.%s.svc:%d" (include "tokendata.componentName" (dict "root" .root "component" "simulator")) .root.Release.Namespace (int .port) -}}
{{- end -}}

{{/* The token file's volume mount, when a token file is mounted. */}}
{{- define "tokendata.tokenMount" -}}
{{- if include "tokendata.hasTokenFile" . -}}
- name: token
  mountPath: /etc/tokendata
  readOnly: true
{{- end -}}
{{- end -}}

{{/* The token file's volume, when a token file is mounted. */}}
{{- define "tokendata.tokenVolume" -}}
{{- if include "tokendata.hasTokenFile" . -}}
- name: token
  configMap:
    name: {{ include "tokendata.tokenConfigMap" . }}
    items:
      - key: {{ .Values.token.existingConfigMapKey }}
        path: token.yaml
{{- end -}}
{{- end -}}

{{/* The checksum of the chart's own token file (rolls the pods on a change). */}}
{{- define "tokendata.tokenChecksum" -}}
{{- if and .Values.token.file (not .Values.token.existingConfigMap) -}}
{{- toYaml .Values.token.file | sha256sum -}}
{{- end -}}
{{- end -}}

{{/*
The signing key (signing.existingSecret): the edge's SIGNING_KEY_FILE and,
during a rotation, SIGNING_PREVIOUS_KEY_FILE, files of a Secret volume
mounted read-only at /etc/tokendata-signing (beside, not inside, the
token file's read-only mount). Empty without a Secret.
*/}}
{{- define "tokendata.signingEnv" -}}
{{- with .Values.signing.existingSecret }}
- name: SIGNING_KEY_FILE
  value: /etc/tokendata-signing/signing.pem
{{- if $.Values.signing.previousKey }}
- name: SIGNING_PREVIOUS_KEY_FILE
  value: /etc/tokendata-signing/previous.pem
{{- end }}
{{- end }}
{{- end -}}

{{- define "tokendata.signingMount" -}}
{{- if .Values.signing.existingSecret -}}
- name: signing
  mountPath: /etc/tokendata-signing
  readOnly: true
{{- end -}}
{{- end -}}

{{/*
The Secret's volume: only the keys named, under fixed file names. Readable
by the pod's group only (0440) when the pod has an fsGroup, which the
kubelet gives the files; without one (OpenShift assigns its own, or a pod
security context without ids) the files are root's, so they must be
readable by all (0444) for the non-root edge to read them.
*/}}
{{- define "tokendata.signingVolume" -}}
{{- with .Values.signing.existingSecret -}}
- name: signing
  secret:
    secretName: {{ . }}
    defaultMode: {{ if (($.Values.edge.podSecurityContext | default dict).fsGroup) }}0440{{ else }}0444{{ end }}
    items:
      - key: {{ $.Values.signing.key }}
        path: signing.pem
      {{- with $.Values.signing.previousKey }}
      - key: {{ . }}
        path: previous.pem
      {{- end }}
{{- end -}}
{{- end -}}

{{/*
Pod annotation that rolls the edge when the signing key changes: a digest
of the Secret's keys in use (salted with the release), read from the
cluster by `helm install/upgrade`; empty (no annotation) under `helm
template`, which cannot read it: there, restart the edge yourself.
*/}}
{{- define "tokendata.signingChecksum" -}}
{{- with .Values.signing.existingSecret -}}
{{- $secret := lookup "v1" "Secret" $.Release.Namespace . -}}
{{- if and $secret $secret.data -}}
{{- $cur := index $secret.data $.Values.signing.key | default "" -}}
{{- $prev := "" -}}
{{- with $.Values.signing.previousKey }}{{ $prev = index $secret.data . | default "" }}{{ end -}}
{{- printf "%s/%s/%s/%s" $.Release.Namespace $.Release.Name $cur $prev | sha256sum -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* YAML list fragments joined, the empty ones left out. */}}
{{- define "tokendata.joinYAML" -}}
{{- $parts := list -}}
{{- range . }}{{ with trim . }}{{ $parts = append $parts . }}{{ end }}{{ end -}}
{{- join "\n" $parts -}}
{{- end -}}

{{/*
A pod's tolerations: the component's own (.tolerations), then, for
node.kubernetes.io/unreachable and node.kubernetes.io/not-ready unless
the component tolerates that key itself, NoExecute for
lifecycle.nodeLostTolerationSeconds (null: none, Kubernetes' default of
300 s applies). Call with (dict "root" $ "tolerations" list); renders the
list as YAML, or nothing.
*/}}
{{- define "tokendata.tolerations" -}}
{{- $out := list -}}
{{- range .tolerations }}{{ $out = append $out . }}{{ end -}}
{{- $secs := .root.Values.lifecycle.nodeLostTolerationSeconds -}}
{{- if not (kindIs "invalid" $secs) -}}
{{- range $key := list "node.kubernetes.io/unreachable" "node.kubernetes.io/not-ready" -}}
{{- $own := false -}}
{{- range $.tolerations }}{{ if eq (toString .key) $key }}{{ $own = true }}{{ end }}{{ end -}}
{{- if not $own -}}
{{- $out = append $out (dict "key" $key "operator" "Exists" "effect" "NoExecute" "tolerationSeconds" (int64 $secs)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- with $out }}{{ toYaml . }}{{ end -}}
{{- end }}

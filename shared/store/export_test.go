package store

// ForcePerKey makes r write the history key by key, as it does on a Redis
// Cluster, so that the path is tested on one node.
func ForcePerKey(r *Redis) { r.forcePerKey = true }

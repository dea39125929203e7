package contract

// CollectorOf is the collector that writes domain d.
func CollectorOf(d Domain) string {
	switch d {
	case DomainMarket:
		return CollectorMarket
	case DomainHolders:
		return CollectorHolders
	}
	return CollectorSupply
}

// PermanentKind reports whether a failed run of this kind will fail again
// until an operator changes something (the configuration, the endpoint,
// its key or plan): waiting does not help, and no message says it does.
func PermanentKind(kind string) bool {
	switch kind {
	case ErrKindConfig, ErrKindForbidden, ErrKindUnsupported, ErrKindTooLarge:
		return true
	}
	return false
}

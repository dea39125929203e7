package conneg

// ETagListMatches reports whether the If-None-Match field value list
// matches etag, comparing opaque tags weakly (W/ ignored).
func ETagListMatches(list, etag string) bool {
	for len(list) > 0 {
		// skip separators
		for len(list) > 0 && (list[0] == ' ' || list[0] == '\t' || list[0] == ',') {
			list = list[1:]
		}
		if list == "" {
			return false
		}
		if list[0] == '*' {
			return true
		}
		if len(list) >= 2 && list[0] == 'W' && list[1] == '/' {
			list = list[2:]
		}
		if list == "" || list[0] != '"' {
			return false // malformed: not a match
		}
		end := 1
		for end < len(list) && list[end] != '"' {
			end++
		}
		if end == len(list) {
			return false // unterminated
		}
		if list[:end+1] == etag {
			return true
		}
		list = list[end+1:]
	}
	return false
}

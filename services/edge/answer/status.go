package answer

// The HTTP status codes of the API's answers (RFC 9110 §15), with the
// names RFC 9110 gives them: rendering never imports
// net/http.
const (
	StatusOK                  = 200
	StatusNoContent           = 204
	StatusNotModified         = 304
	StatusNotFound            = 404
	StatusMethodNotAllowed    = 405
	StatusContentTooLarge     = 413
	StatusInternalServerError = 500
	StatusServiceUnavailable  = 503
)

// TimeFormat is the format of HTTP dates (RFC 9110 §5.6.7, IMF-fixdate),
// net/http's TimeFormat.
const TimeFormat = "Mon, 02 Jan 2006 15:04:05 GMT"

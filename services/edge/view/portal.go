package view

// The token's portal: GET / (and /index.html), an HTML page rendered on
// the server from the same state and at the same moment as the API's
// bodies, so its figures are there without JavaScript and equal to the
// API's. It is one more pre-rendered route of the market group (same
// Cache-Control, ETag, gzip and brotli variants), plus three embedded
// assets under content-hashed paths. EDGE_PORTAL=off leaves all of them
// out: / is then the API's JSON 404, for operators who host their own
// site.

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"net/url"
	"regexp"
	"strings"

	"github.com/tokendata/tokendata/services/edge/answer"
)

// Paths of the portal page.
const (
	PathPortal      = "/"
	PathPortalIndex = "/index.html"
	// PathAssets is the prefix of the portal's assets; their names carry
	// a hash of their bytes, so they are cached for good.
	PathAssets = "/assets/"
)

const ContentHTML = "text/html; charset=utf-8"

// cacheImmutable is the Cache-Control of the content-hashed assets: a
// changed asset has another path.
const CacheImmutable = "public, max-age=31536000, immutable"

//go:embed portal
var portalFS embed.FS

var portalTemplate = template.Must(template.New("page.html").ParseFS(portalFS, "portal/page.html"))

// asset is one embedded file of the portal, served at its hashed path.
type asset struct {
	Path string
	Resp *answer.Answer
}

// portalAssets are the stylesheet, the script and the icon, each
// rendered once into a response with its compressed variants.
type PortalAssets struct {
	css, js, icon asset
}

func LoadPortalAssets() (*PortalAssets, error) {
	load := func(name, ext, contentType string) (asset, error) {
		body, err := portalFS.ReadFile("portal/" + name + "." + ext)
		if err != nil {
			return asset{}, err
		}
		sum := sha256.Sum256(body)
		path := PathAssets + name + "-" + hex.EncodeToString(sum[:6]) + "." + ext
		resp := answer.NewOK(contentType, CacheImmutable, body, answer.DataInfo{}).WithVary()
		resp.Compress(nil)
		return asset{Path: path, Resp: resp}, nil
	}
	var a PortalAssets
	var err error
	if a.css, err = load("portal", "css", "text/css; charset=utf-8"); err != nil {
		return nil, err
	}
	if a.js, err = load("portal", "js", "text/javascript; charset=utf-8"); err != nil {
		return nil, err
	}
	if a.icon, err = load("icon", "svg", "image/svg+xml"); err != nil {
		return nil, err
	}
	return &a, nil
}

// list is every asset, for the router.
func (a *PortalAssets) List() []asset { return []asset{a.css, a.js, a.icon} }

// safeOrigin matches an https origin that can stand in a
// Content-Security-Policy source list as it is.
var safeOrigin = regexp.MustCompile(`^https://[A-Za-z0-9.-]+(:[0-9]{1,5})?$`)

// logoOrigin is the origin of the token file's logo when it is an https
// URL whose origin is safe to name in the policy; "" otherwise (then the
// page shows no logo image).
func logoOrigin(logo string) string {
	u, err := url.Parse(logo)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return ""
	}
	origin := "https://" + strings.ToLower(u.Host)
	if !safeOrigin.MatchString(origin) {
		return ""
	}
	return origin
}

// portalCSP is the page's Content-Security-Policy: nothing by default,
// then exactly what the page uses. The script and the stylesheet come
// from this origin; the page has no inline script, no inline style and
// no eval; the refresh script reads this origin's API; images are the
// icon, and the token's logo from its own origin. No form, no frame, no
// base URL.
func PortalCSP(logo string) string {
	img := "'self'"
	if o := logoOrigin(logo); o != "" {
		img += " " + o
	}
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src " + img +
		"; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

// portal renders the page of the current state.
func (r *renderer) portal() *answer.Answer {
	page := r.portalPage()
	var buf bytes.Buffer
	if err := portalTemplate.Execute(&buf, page); err != nil {
		return r.internal(err)
	}
	resp := answer.NewOK(ContentHTML, r.cacheControl(answer.GroupMarket), buf.Bytes(), r.info(portalDomains...))
	resp.Headers = append(resp.Headers,
		answer.Header{Key: "Content-Security-Policy", Values: answer.One(r.CSP)},
		answer.Header{Key: "Referrer-Policy", Values: hdrNoReferrer},
		answer.Header{Key: "X-Frame-Options", Values: hdrDeny},
	)
	return resp
}

var (
	hdrNoReferrer = answer.One("no-referrer")
	hdrDeny       = answer.One("DENY")
)

package view

import (
	"time"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/snapshot"
	"github.com/tokendata/tokendata/shared/contract"
)

// Interface versions of README, Endpoints.
const (
	APIVersion    = "2.0"
	PortalVersion = 4
)

// Route paths of README, Endpoints (and the OpenAPI document).
const (
	PathTotalSupply       = "/api/total-supply"
	PathCirculatingSupply = "/api/circulating-supply"
	PathMaxSupply         = "/api/max-supply"
	PathSupply            = "/api/supply"
	PathCoinGeckoSupply   = "/api/coingecko-supply"
	PathPrice             = "/api/price"
	PathHolders           = "/api/holders"
	PathTokenMetadata     = "/api/token-metadata"
	PathHealth            = "/api/health"
	PathExchanges         = "/api/exchanges"
	PathMarket            = "/api/market"
	PathMarketData        = "/api/market-data"
	PathStatus            = "/api/status"
	PathMarketPairs       = "/api/market-pairs"
	PathOpenAPI           = "/api/openapi.json"
	// PathEvents is the stream of changes (server-sent events).
	PathEvents = "/api/events"
	// PathKeys is the JWKS of the keys that sign the answers.
	PathKeys = "/api/keys"
	// PathHistory is the template of the history paths: measure one of
	// historyMeasures' segments, window one of contract.HistoryWindows.
	// Paths, not query strings: the cache tier drops query strings.
	PathHistory = "/api/history/:measure/:window"
)

// HistoryPath is the path of measure segment m over window w.
func HistoryPath(m string, w contract.Window) string { return "/api/history/" + m + "/" + string(w) }

// Indexes of the pre-rendered routes in a view.
const (
	rTotalSupply = iota
	rCirculatingSupply
	rMaxSupply
	rSupply
	rCoinGeckoSupply
	rPrice
	rHolders
	rTokenMetadata
	rExchanges
	rMarket
	RouteMarketData
	rMarketPairs
	rOpenAPI
	rKeys
	RoutePortal
	numRendered
)

// renderedRoute is a route whose answer is rendered once per change.
type renderedRoute struct {
	Path   string
	group  answer.Group
	render func(r *renderer) *answer.Answer
	// compress is true for the JSON routes: their bodies of
	// minCompressBytes or more get gzip and brotli variants, and every
	// answer of the route says Vary: Accept-Encoding. The plain-text supply
	// answers (a number of a few bytes) never do.
	compress bool
}

var RenderedRoutes = [numRendered]renderedRoute{
	rTotalSupply:       {PathTotalSupply, answer.GroupSupply, (*renderer).totalSupply, false},
	rCirculatingSupply: {PathCirculatingSupply, answer.GroupSupply, (*renderer).circulatingSupply, false},
	rMaxSupply:         {PathMaxSupply, answer.GroupStatic, (*renderer).maxSupply, false},
	rSupply:            {PathSupply, answer.GroupSupply, (*renderer).supply, true},
	rCoinGeckoSupply:   {PathCoinGeckoSupply, answer.GroupSupply, (*renderer).coinGeckoSupply, true},
	rPrice:             {PathPrice, answer.GroupMarket, (*renderer).price, true},
	rHolders:           {PathHolders, answer.GroupHolders, (*renderer).holders, true},
	rTokenMetadata:     {PathTokenMetadata, answer.GroupStatic, (*renderer).tokenMetadata, true},
	rExchanges:         {PathExchanges, answer.GroupStatic, (*renderer).exchanges, true},
	rMarket:            {PathMarket, answer.GroupMarket, (*renderer).market, true},
	RouteMarketData:    {PathMarketData, answer.GroupMarket, (*renderer).marketData, true},
	rMarketPairs:       {PathMarketPairs, answer.GroupMarket, (*renderer).marketPairs, true},
	rOpenAPI:           {PathOpenAPI, answer.GroupStatic, (*renderer).openAPI, true},
	rKeys:              {PathKeys, answer.GroupStatic, (*renderer).keys, false},
	// The portal page is cached like the market group: its headline
	// figures are the market's. Not rendered with EDGE_PORTAL=off.
	RoutePortal: {PathPortal, answer.GroupMarket, (*renderer).portal, true},
}

// view is what the request path reads through one atomic pointer: the
// state it was rendered from and every pre-rendered answer.
type View struct {
	State      *snapshot.State
	renderedAt time.Time
	// routes[rPortal] is nil when the portal is off.
	Routes [numRendered]*answer.Answer
	// hist are the history answers, by historyMeasures and
	// contract.HistoryWindows index.
	Hist [snapshot.NumHistMeasures][snapshot.NumHistWindows]histAnswer
	// nextChange is the first moment a domain crosses its stale-after or
	// its TTL, when the view must be rendered again (zero: never).
	NextChange time.Time
	// token are the tokendata_token_* gauges' values (gauges.go).
	Token *tokenFigures
}

// histAnswer is one pre-rendered history answer and what it was rendered
// from: a later render with the same series and stale flag keeps it as it
// is (a history body is encoded and compressed once per change, not once
// per render of the other routes).
type histAnswer struct {
	Resp   *answer.Answer
	series *snapshot.HistorySeries
	stale  bool
}

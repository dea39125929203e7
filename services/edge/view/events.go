package view

import (
	"time"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/shared/contract"
)

// Body is what /api/events carries for path: the identity body of the
// path's answer in v, as the path serves it, and the updated_at of the
// document it was rendered from. ok is false when the answer is not a
// 200 (no data: the stream carries figures, /api/status says why one is
// missing) or path is not a rendered route.
func (v *View) Body(path string) (body []byte, dataTime time.Time, ok bool) {
	for i, rt := range RenderedRoutes {
		if rt.Path != path {
			continue
		}
		a := v.Routes[i]
		if a == nil || a.Status != answer.StatusOK {
			return nil, time.Time{}, false
		}
		if d := v.State.Docs[domainOf(rt.group)]; d != nil {
			dataTime = d.Env.UpdatedAt
		}
		return a.Body, dataTime, true
	}
	return nil, time.Time{}, false
}

// domainOf is the domain whose document a group's answers are rendered
// from ("" for the static group).
func domainOf(g answer.Group) contract.Domain {
	switch g {
	case answer.GroupSupply:
		return contract.DomainSupply
	case answer.GroupMarket:
		return contract.DomainMarket
	case answer.GroupHolders:
		return contract.DomainHolders
	}
	return ""
}

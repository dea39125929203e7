package edge

import (
	"context"
	"time"

	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/events"
	"github.com/tokendata/tokendata/services/edge/view"
)

// The stream of changes (GET /api/events). The mirror says when it
// published a view; eventFeed then offers the hub the bodies of the
// event's answers in that view, the same bytes the paths serve, and the
// hub makes an event of each that changed (services/edge/events). The
// status event is the /api/status body, offered when its verdict (status
// and problems) changes; the store's health moves without a new view, so
// the feed also looks once a second.

// eventPaths are the answer each event name carries.
var eventPaths = []struct{ name, path string }{
	{events.NameSupply, view.PathSupply},
	{events.NamePrice, view.PathPrice},
	{events.NameMarket, view.PathMarket},
	{events.NameHolders, view.PathHolders},
}

// statusLook is how often the feed looks at the status verdict besides
// publications.
const statusLook = time.Second

// eventFeed offers the hub each published view until ctx is done.
func (s *Server) eventFeed(ctx context.Context) error {
	tick := time.NewTicker(statusLook)
	defer tick.Stop()
	s.offerEvents()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.published:
		case <-tick.C:
		}
		s.offerEvents()
	}
}

// viewPublished is the mirror's hook: it wakes the feed, never blocks.
func (s *Server) viewPublished() {
	select {
	case s.published <- struct{}{}:
	default:
	}
}

// offerEvents offers the hub the current view's answers and status, from
// the first read of the store on (mirror.Checked).
func (s *Server) offerEvents() {
	if !s.mirror.Checked() {
		return
	}
	v := s.mirror.View()
	offers := make([]events.Offer, 0, len(eventPaths)+1)
	for _, ep := range eventPaths {
		body, at, ok := v.Body(ep.path)
		if ok {
			offers = append(offers, events.Offer{Name: ep.name, Body: body, DataTime: at})
		}
	}
	if st := s.mirror.StatusReportOf(v.State, s.mirror.Statuses()); s.statusChanged(st) {
		if body, err := answer.EncodeJSON(st); err == nil {
			offers = append(offers, events.Offer{Name: events.NameStatus, Body: body})
		}
	}
	s.serve.Published(s.hub.Publish(offers...))
}

// statusChanged reports whether st's verdict differs from the last one
// offered, and keeps it (only the feed goroutine calls it).
func (s *Server) statusChanged(st view.StatusBody) bool {
	key := st.Status
	for _, p := range st.Problems {
		key += "\x00" + p
	}
	if s.lastVerdict != nil && *s.lastVerdict == key {
		return false
	}
	s.lastVerdict = &key
	return true
}

package edge

import (
	"github.com/gin-gonic/gin"
	"github.com/tokendata/tokendata/services/edge/answer"
	"github.com/tokendata/tokendata/services/edge/view"

	"github.com/tokendata/tokendata/shared/contract"
)

// serveStatus answers /api/status, computed per request from the snapshot,
// the last store check and the status records of the last read.
func (s *Server) serveStatus(c *gin.Context) {
	body, err := answer.EncodeJSON(s.statusReportNow())
	if err != nil {
		s.log.Error("encode status", "error", err.Error())
		writeResponse(s.errInternal, c.Writer, c.Request)
		return
	}
	writeResponse(answer.NewOK(answer.ContentJSON, answer.NoStore, body, answer.DataInfo{}), c.Writer, c.Request)
}

// statusReportNow is the status report of now.
func (s *Server) statusReportNow() view.StatusBody {
	var statuses map[string]contract.Status
	if p := s.statuses.Load(); p != nil {
		statuses = *p
	}
	return s.bodies.StatusReport(s.view.Load().State, s.health.Load(), statuses, s.backend, s.now())
}

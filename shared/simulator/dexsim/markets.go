package dexsim

// The market model of each mint the server answers for: set, change and
// read it, and its ground truth.

// SetMarket sets the market of mint (a deep copy; m.Token.Address defaults
// to mint).
func (s *Server) SetMarket(mint string, m Market) {
	c := m.Clone()
	if c.Token.Address == "" {
		c.Token.Address = mint
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.markets[mint] = &c
	s.anchorLocked(mint, 0)
}

// LoadScenario sets the market of mint to Scenario(mint, seed) and returns
// it; the seed also shapes its past prices (PriceAt).
func (s *Server) LoadScenario(mint string, seed uint64) Market {
	m := Scenario(mint, seed)
	c := m.Clone()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.markets[mint] = &c
	s.anchorLocked(mint, seed)
	return m
}

// RemoveMarket forgets mint: DexScreener answers [] and GeckoTerminal 404.
func (s *Server) RemoveMarket(mint string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.markets, mint)
	delete(s.history, mint)
}

// Market returns a copy of the market of mint.
func (s *Server) Market(mint string) (Market, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m, ok := s.markets[mint]
	if !ok {
		return Market{}, false
	}
	return m.Clone(), true
}

// Update runs fn on the market of mint under the server's lock, so a change
// of several fields is seen at once. It reports false for an unknown mint.
func (s *Server) Update(mint string, fn func(*Market)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.markets[mint]
	if ok {
		fn(m)
	}
	return ok
}

// SetPair adds p to the market of mint, or replaces the pair with its
// address.
func (s *Server) SetPair(mint string, p Pair) bool {
	p = p.clone()
	return s.Update(mint, func(m *Market) {
		for i := range m.Pairs {
			if m.Pairs[i].Address == p.Address {
				m.Pairs[i] = p
				return
			}
		}
		m.Pairs = append(m.Pairs, p)
	})
}

// RemovePair removes the pair at address from the market of mint and
// reports whether it was there.
func (s *Server) RemovePair(mint, address string) bool {
	found := false
	s.Update(mint, func(m *Market) {
		for i := range m.Pairs {
			if m.Pairs[i].Address == address {
				m.Pairs = append(m.Pairs[:i:i], m.Pairs[i+1:]...)
				found = true
				return
			}
		}
	})
	return found
}

// SetPairPrice sets one pair's priceUsd ("" for absent) and priceNative.
func (s *Server) SetPairPrice(mint, address, priceUSD, priceNative string) bool {
	found := false
	s.Update(mint, func(m *Market) {
		for i := range m.Pairs {
			if m.Pairs[i].Address == address {
				m.Pairs[i].PriceUSD, m.Pairs[i].PriceNative = priceUSD, priceNative
				found = true
			}
		}
	})
	return found
}

// Reprice moves the token's price on every pair (see Market.Reprice).
func (s *Server) Reprice(mint, price string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.markets[mint]
	if !ok || !m.Reprice(price) {
		return false
	}
	s.logPriceLocked(mint)
	return true
}

// Truth is the ground truth for mint under the contract's market rules (an
// unknown mint is not indexed).
func (s *Server) Truth(mint string) Truth {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m, ok := s.markets[mint]
	if !ok {
		return Truth{Mint: mint, PairPriceUSD: map[string]string{}}
	}
	return m.Truth()
}

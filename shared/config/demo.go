package config

// DemoMint is the simulated token of demo mode (base58 of a SHA-256 of
// "tokendata demo mint": no real token has it).
const DemoMint = "Ag2ntwSLqsLLyasGT6KpgbL8EMsSfmmsjDCrG7noZ2HR"

// DemoMaxSupply is the maximum supply the demo token discloses, in whole
// tokens.
const DemoMaxSupply = "1000000000"

// DemoToken is the token file of demo mode, served from the simulator.
func DemoToken() Token {
	dec := uint8(6)
	return Token{
		Mint:          DemoMint,
		Name:          "Demo Token",
		Symbol:        "DEMO",
		Decimals:      &dec,
		MaxSupply:     DemoMaxSupply,
		Description:   "A simulated token: this service runs in demo mode against its built-in simulator.",
		Logo:          "https://example.com/demo-token.png",
		PublicBaseURL: "http://localhost:8080",
		Links: []Link{
			{Kind: "website", URL: "https://example.com"},
			{Kind: "docs", URL: "https://example.com/docs"},
		},
	}
}

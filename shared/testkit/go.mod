module github.com/tokendata/tokendata/shared/testkit

go 1.26.0

require github.com/tokendata/tokendata/shared/simulator v0.0.0

require (
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/mr-tron/base58 v1.3.0 // indirect
)

replace github.com/tokendata/tokendata/shared/simulator => ../simulator

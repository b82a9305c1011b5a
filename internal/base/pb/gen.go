// Package pb holds every wire message of ray-go (ray.proto) and its generated code.
//
// Generated code is committed. To regenerate (needs protoc on PATH; Debian's
// protobuf-compiler 3.21 works):
//
//	apt-get install -y protobuf-compiler
//	cd internal/base/pb && go generate .
//
// go generate builds protoc-gen-go from the google.golang.org/protobuf module at the
// version go.mod requires (v1.36.12), so the generator always matches the runtime the
// code runs with (code from an older generator uses deprecated runtime APIs), and removes
// it afterwards; nothing needs installing.
//
// This package is a leaf: it imports only protobuf.
package pb

//go:generate go build -o protoc-gen-go.bin google.golang.org/protobuf/cmd/protoc-gen-go
//go:generate protoc --plugin=protoc-gen-go=protoc-gen-go.bin --go_out=. --go_opt=paths=source_relative ray.proto
//go:generate rm -f protoc-gen-go.bin

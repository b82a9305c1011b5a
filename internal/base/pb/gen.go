// Package pb holds every wire message of ray-go (ray.proto) and its generated code.
//
// Generated code is committed. To regenerate (needs protoc, Debian's protobuf-compiler
// 3.21 works, and protoc-gen-go v1.33.0 on PATH):
//
//	apt-get install -y protobuf-compiler
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.33.0
//	go generate ./internal/pb
//
// This package is a leaf: it imports only protobuf.
package pb

//go:generate protoc --go_out=. --go_opt=paths=source_relative ray.proto

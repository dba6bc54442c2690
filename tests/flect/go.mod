module opsdk.test/flect

go 1.21

require github.com/gobuffalo/flect v1.0.3

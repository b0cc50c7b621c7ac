package verify

import _ "github.com/rlctl/rlctl/internal/target/all" // every target kind, as the command line has them

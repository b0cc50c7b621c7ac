package measure

import _ "github.com/rlctl/rlctl/internal/target/all" // the kinds a scenario names, as the command line has them

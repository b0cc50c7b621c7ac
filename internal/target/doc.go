// Package target builds what a run sends its traffic to. Each kind (an
// http deployment, a user's redis-script, simulated gateways) lives in a
// package of its own under internal/target and registers one Kind here:
// the checks the scenario loader borrows from it and its Build, which
// turns the scenario's target section and a narrow plan around it (Spec)
// into a traffic target, the hooks that carry out its faults and what must
// be stopped and read once the traffic is over (Built). The conductor,
// verify, looks a kind up by name and knows none of them.
package target

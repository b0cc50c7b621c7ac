//go:build !unix

package discover

// nginxStudyTargets: the nginx tests start nginx as a Unix process
// group, so elsewhere the study has none.
func nginxStudyTargets() []studyTarget { return nil }

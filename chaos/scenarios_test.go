package chaos_test

// scenarios is every scenario of the suite, in table order.
var scenarios = concat(netScenarios(), ftsScenarios(), []scenario{killScenario(), stormScenario()}, procScenarios(), storageScenarios())

func concat(groups ...[]scenario) []scenario {
	var out []scenario
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

"""Model-server tooling: SGLang's command line and the checks behind `frognano model check`."""

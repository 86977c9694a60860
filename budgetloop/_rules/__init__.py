"""The budget rules: counting and projecting a request, the ceilings, the checks at each point of
a turn, the run's money, the context's tokens, and the policies that end a run well."""

"""Tools: running a turn's calls (checked, at once, in request order), the threads they run on,
holding a call for a person, and what a tool returns made into JSON."""

/* A C static library: the wrappers build C too. */
long consumer_mix(long a, long b) { return a * 1000003L ^ b; }

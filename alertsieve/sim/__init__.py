"""Simulated Rubin visits: alert populations, cutouts and the simulator that draws them."""

#: Seconds between Rubin visits (a 30 s exposure, readout and slew: DMTN-028's model of the
#: stream). The simulator's, the producer's and the benchmarks' default pace.
VISIT_CADENCE_S = 39.0

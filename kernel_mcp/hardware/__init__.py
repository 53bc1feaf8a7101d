"""Facts about GPUs, no process started and nothing measured here:

    devices.py     datasheet ceilings per device (with sources), the present device, the fastest peak
    targets.py     compile targets by name (sm_90, gfx942...) and this machine's default set
    occupancy.py   static occupancy from registers, shared memory / LDS and block size
"""

"""The UNTRUSTED one-shot steps, each a process that runs candidate code once (main.py serves one request
over a socket, JSON in and out):

    triton_record.py   the Triton launches of one call on the smallest test
    triton_build.py    those launches compiled for each target, with Triton's own specialization rules
    cpp_capture.py     the CUDA/HIP C++ a candidate hands to torch.utils.cpp_extension, captured unbuilt
    counter_target.py  the process a hardware profiler (ncu, rocprofv3) wraps
"""

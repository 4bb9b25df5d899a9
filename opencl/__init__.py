"""FinePar's OpenCL kernels (.cl files), shipped as package data of ``finepar.opencl``."""

"""upskill-hub: create, measure and share agent skills and compute kernels on the Hugging Face Hub."""

__version__ = "0.1.0"

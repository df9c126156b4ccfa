"""The ``upskill-hub`` command line: thin front ends over the library."""

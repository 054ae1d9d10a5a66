"""Generated from proto/armada/v1 by regen_proto.py: do not edit."""

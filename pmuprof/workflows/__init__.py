"""What composes capture and report: demo, watch (triggered capture), schedule and history."""

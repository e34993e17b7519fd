"""What verified schedules are turned into for people and other systems: pictures."""

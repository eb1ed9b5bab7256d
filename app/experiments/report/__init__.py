"""What a study shows people who were not there: charts, HTML reports, CSV exports, its environment."""

module isobar.dev/controller

go 1.26.0
